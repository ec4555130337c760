import pg from 'pg';
import { SOURCE_SESSION_OPTIONS } from '../../source/postgres/change-stream.js';

/** One MVCC snapshot shared by every connection that copies a pipeline's tables. */
export interface SnapshotSession {
  snapshotName: string;
  release(): Promise<void>;
}

/**
 * Exports a snapshot from a REPEATABLE READ transaction held open until release(). Used when no
 * slot was just created (a resumed or added table); the stream then replays from the slot's
 * position, which is older, and the sink's idempotent writes make the result converge.
 */
export async function exportSnapshot(source: pg.ClientConfig): Promise<SnapshotSession> {
  const client = new pg.Client({ ...source, application_name: 'replicator-snapshot' });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const { rows } = await client.query<{ name: string }>('SELECT pg_export_snapshot() AS name');
    return {
      snapshotName: rows[0]?.name as string,
      release: async () => {
        await client.query('COMMIT').catch(() => undefined);
        await client.end().catch(() => undefined);
      },
    };
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
}

/** Opens a connection reading inside the given snapshot. */
export async function connectInSnapshot(source: pg.ClientConfig, snapshotName: string): Promise<pg.Client> {
  // Same session settings as the stream, so snapshot and stream render values identically.
  const client = new pg.Client({
    ...source,
    application_name: 'replicator-snapshot',
    options: SOURCE_SESSION_OPTIONS,
  });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await client.query(`SET TRANSACTION SNAPSHOT ${pg.escapeLiteral(snapshotName)}`);
    return client;
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
}
