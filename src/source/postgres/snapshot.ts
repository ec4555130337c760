import type { Readable } from 'node:stream';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { TableSchema } from '../../core/change.js';
import { surviveConnectionLoss } from '../../core/pg-connection-loss.js';
import type {
  PartitionPlan,
  PlannedPartition,
  SnapshotReader,
  SourceSnapshot,
  TransactionVisibility,
} from '../../core/source.js';
import { partitionCopySql, planPartitions } from './partition-planner.js';
import { SOURCE_SESSION_OPTIONS } from './replication-connection.js';
import type { SlotWithSnapshot } from './slot.js';
import { SnapshotVisibility } from './snapshot-visibility.js';

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
    const { rows } = await client.query<{ name: string }>('SELECT pg_export_snapshot() AS name');
    let released = false;
    return snapshotNamed(connection, rows[0]?.name as string, async () => {
      if (released) return;
      released = true;
      await client.query('COMMIT').catch(() => undefined);
      await client.end().catch(() => undefined);
    });
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

  copyPartition(table: TableSchema, partition: PlannedPartition): Readable {
    return this.client.query(copyTo(partitionCopySql(table, partition)));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.end().catch(() => undefined);
  }
}
