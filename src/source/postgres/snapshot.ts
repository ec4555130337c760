import type { Readable } from 'node:stream';
import pg from 'pg';
import type { Row, TableSchema } from '../../core/change.js';
import type { CopyFormat } from '../../core/copy-binary.js';
import { copyTextRows } from '../../core/copy-text.js';
import { parseLsn } from '../../core/lsn.js';
import { surviveConnectionLoss } from '../../core/pg-connection-loss.js';
import { SnapshotVisibility } from '../../core/snapshot-visibility.js';
import type {
  PartitionPlan,
  PlannedPartition,
  SnapshotReader,
  SourceSnapshot,
  TransactionVisibility,
} from '../../core/source.js';
import { CopyOutStream } from './copy-out-stream.js';
import { keysCopySql, partitionCopySql, planPartitions } from './partition-planner.js';
import { SOURCE_SESSION_OPTIONS } from './replication-connection.js';
import type { SlotWithSnapshot } from './slot.js';

/**
 * Exports a snapshot from a REPEATABLE READ transaction held open until release(). Used when no
 * slot was just created (a resumed or added table); the stream then replays from the slot's
 * position, which is older, and the sink's idempotent writes make the result converge.
 */
export async function exportSnapshot(connection: pg.ClientConfig): Promise<SourceSnapshot> {
  const client = new pg.Client({ ...connection, application_name: 'replicator-snapshot' });
  surviveConnectionLoss(client);
  await client.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    // The snapshot is taken as this statement starts, so the position read in it is past the commit
    // of every transaction the snapshot sees (a commit is logged before it becomes visible).
    const { rows } = await client.query<{ name: string; visibility: string; lsn: string }>(
      `SELECT pg_export_snapshot() AS name, txid_current_snapshot()::text AS visibility,
         (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END)::text AS lsn`,
    );
    const row = rows[0] as { name: string; visibility: string; lsn: string };
    let released = false;
    const snapshot = snapshotNamed(connection, row.name, async () => {
      if (released) return;
      released = true;
      await client.query('COMMIT').catch(() => undefined);
      await client.end().catch(() => undefined);
    });
    return { ...snapshot, stamp: { visibility: row.visibility, lsn: parseLsn(row.lsn) } };
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
}

/** The snapshot a slot exported when it was created, alive until the slot's connection is released. */
export function slotSnapshot(connection: pg.ClientConfig, created: SlotWithSnapshot): SourceSnapshot {
  return snapshotNamed(connection, created.snapshotName, () => created.release());
}

function snapshotNamed(
  connection: pg.ClientConfig,
  snapshotName: string,
  release: () => Promise<void>,
): SourceSnapshot {
  return {
    openReader: async () => new PostgresSnapshotReader(await connectInSnapshot(connection, snapshotName)),
    release,
  };
}

/** Opens a connection reading inside the given snapshot. */
async function connectInSnapshot(connection: pg.ClientConfig, snapshotName: string): Promise<pg.Client> {
  // Same session settings as the stream, so snapshot and stream render values identically.
  const client = new pg.Client({
    ...connection,
    application_name: 'replicator-snapshot',
    options: SOURCE_SESSION_OPTIONS,
  });
  surviveConnectionLoss(client);
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

class PostgresSnapshotReader implements SnapshotReader {
  private closed = false;

  constructor(private readonly client: pg.Client) {}

  planPartitions(
    table: TableSchema,
    options: { targetRows: number; maxPartitions: number },
  ): Promise<PartitionPlan> {
    return planPartitions(this.client, table, options);
  }

  async visibility(): Promise<TransactionVisibility> {
    const { rows } = await this.client.query<{ s: string }>('SELECT txid_current_snapshot()::text AS s');
    return SnapshotVisibility.parse(rows[0]?.s as string);
  }

  copyPartition(table: TableSchema, partition: PlannedPartition, format: CopyFormat = 'text'): Readable {
    return this.client.query(new CopyOutStream(partitionCopySql(table, partition, format), format));
  }

  async readRows(table: TableSchema, keys: readonly string[][]): Promise<Row[]> {
    const rows: Row[] = [];
    for (let i = 0; i < keys.length; i += 1_000) {
      // COPY text: each value as its type's output function prints it, as the stream and the copy carry it.
      const copy = this.client.query(new CopyOutStream(keysCopySql(table, keys.slice(i, i + 1_000))));
      for await (const batch of copyTextRows(copy, table.columns)) rows.push(...batch);
    }
    return rows;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.end().catch(() => undefined);
  }
}
