import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';

const run = promisify(execFile);

/** Debian's psql; without it the pipe runs in this process with pg-copy-streams. */
export const PSQL = '/usr/bin/psql';

/** How the pipe is made on this machine, for the report. */
export async function copyPipeTool(): Promise<string> {
  if (!existsSync(PSQL)) return 'a Node.js pipe with pg-copy-streams (no `/usr/bin/psql` on this machine)';
  const { stdout } = await run(PSQL, ['--version']);
  return `a shell pipe between two \`psql\` processes (\`${PSQL}\`, ${stdout.trim()})`;
}

/**
 * `COPY (SELECT * FROM table) TO STDOUT` on the source piped into `COPY table FROM STDIN` on the
 * sink, into an empty table of the same definition; returns the rows the sink's COPY reports.
 */
export async function copyPipe(sourceUrl: string, sinkUrl: string, table: string): Promise<number> {
  const out = `COPY (SELECT * FROM ${table}) TO STDOUT`;
  const into = `COPY ${table} FROM STDIN`;
  if (existsSync(PSQL)) {
    // -X: no ~/.psqlrc; pipefail: a failing reader fails the pipe, not only a failing writer.
    const psql = `${PSQL} -X -v ON_ERROR_STOP=1`;
    const { stdout } = await run(
      'bash',
      ['-c', `set -o pipefail; ${psql} "$SRC" -c "$OUT" | ${psql} "$DST" -c "$INTO"`],
      { env: { ...process.env, SRC: sourceUrl, DST: sinkUrl, OUT: out, INTO: into } },
    );
    const rows = /COPY (\d+)/.exec(stdout)?.[1];
    if (rows === undefined) throw new Error(`psql did not report the rows copied: ${stdout}`);
    return Number(rows);
  }
  const source = new pg.Client({ connectionString: sourceUrl });
  const sink = new pg.Client({ connectionString: sinkUrl });
  await Promise.all([source.connect(), sink.connect()]);
  try {
    const writer = sink.query(copyFrom(into));
    await pipeline(source.query(copyTo(out)), writer);
    return writer.rowCount;
  } finally {
    await Promise.all([source.end(), sink.end()]);
  }
}
