import { DuckDBInstance } from '@duckdb/node-api';

/**
 * DuckDB lets one process write a file, through one instance: every sink of this process writing
 * a file shares its instance, counted, and the last to leave closes it.
 */
const open = new Map<string, { instance: Promise<DuckDBInstance>; users: number }>();

/** The instance of a database file (absolute, symlinks resolved), opening it on first use. */
export async function acquireInstance(path: string): Promise<DuckDBInstance> {
  let entry = open.get(path);
  if (!entry) {
    const instance = DuckDBInstance.create(path).catch((error: unknown) => {
      open.delete(path);
      throw lockedError(error);
    });
    entry = { instance, users: 0 };
    open.set(path, entry);
  }
  entry.users++;
  try {
    return await entry.instance;
  } catch (error) {
    entry.users--;
    throw error;
  }
}

/** Lets go of an instance taken by `acquireInstance`; the last user closes it (flushing its WAL). */
export async function releaseInstance(path: string): Promise<void> {
  const entry = open.get(path);
  if (!entry) return;
  entry.users--;
  if (entry.users > 0) return;
  open.delete(path);
  const instance = await entry.instance.catch(() => undefined);
  instance?.closeSync();
}

/** Another process holding the file is said plainly; the path is the operator's, not a secret, but is left out like every DSN value. */
function lockedError(error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  if (/lock/i.test(message)) {
    return new Error(
      'the DuckDB database file is held by another process (DuckDB allows one writing process per file); stop that process or use another file',
      { cause: error },
    );
  }
  return new Error(`cannot open the DuckDB database file: ${message.split('\n')[0]}`, { cause: error });
}
