import type { Readable } from 'node:stream';
import type { Checkpoint, TableRef, TableSchema } from '../core/change.js';
import type { SchemaChangeItem } from '../core/schema-diff.js';
import {
  type ChangeBatch,
  FencedError,
  type Sink,
  type SinkStateStore,
  type SnapshotPartition,
  type StoredSinkCheckpoint,
} from '../core/sink.js';
import { tableRefKey } from './table-ref-key.js';

/**
 * What every sink that sends change envelopes (a broker, a webhook) shares: the shapes of the
 * tables it was opened with, which give the values their types, and schema changes that need no
 * statement, since a message carries no schema and a new column simply appears in `after`.
 */
export abstract class EnvelopeSink implements Sink {
  private readonly tables = new Map<string, TableSchema>();

  abstract open(tables: TableSchema[]): Promise<void>;
  abstract readCheckpoint(): Promise<Checkpoint | null>;
  abstract snapshotPartitionsDone(): Promise<SnapshotPartition[]>;
  abstract resetTable(table: TableSchema): Promise<void>;
  abstract writeSnapshotPartition(
    table: TableSchema,
    partition: SnapshotPartition,
    copyText: Readable,
  ): Promise<number>;
  abstract applyBatch(batch: ChangeBatch): Promise<void>;
  abstract close(): Promise<void>;

  async finishSnapshot(): Promise<void> {}

  planSchemaChange(_current: TableSchema, _changes: readonly SchemaChangeItem[]): string[] {
    return [];
  }

  /** Only takes the new shape, for the types of the values from now on. */
  async applySchemaChange(proposed: TableSchema): Promise<{ skipped: string[] }> {
    this.tables.set(tableRefKey(proposed), proposed);
    return { skipped: [] };
  }

  /** Remembers the shapes of the tables the sink is opened with. */
  protected know(tables: readonly TableSchema[]): void {
    for (const table of tables) this.tables.set(tableRefKey(table), table);
  }

  protected schemaOf(ref: TableRef): TableSchema {
    const table = this.tables.get(tableRefKey(ref));
    if (!table) throw new Error(`table ${ref.schema}.${ref.table} was not opened by this sink`);
    return table;
  }
}

/**
 * An envelope sink with no storage of its own next to the messages: the service keeps its
 * checkpoint and snapshot markers (`SinkContext.state`). What a consumer already received is its
 * own, so a table copied again only forgets its markers.
 */
export abstract class ServiceKeptSink extends EnvelopeSink {
  constructor(protected readonly state: SinkStateStore) {
    super();
  }

  async readCheckpoint(): Promise<Checkpoint | null> {
    const stored = await this.state.readCheckpoint();
    return stored ? { lsn: stored.lsn, epoch: stored.epoch } : null;
  }

  snapshotPartitionsDone(): Promise<SnapshotPartition[]> {
    return this.state.partitionsDone();
  }

  async resetTable(table: TableSchema): Promise<void> {
    await this.state.forgetPartitions(table);
  }

  /**
   * The stored checkpoint, read before a batch is sent: a writer whose epoch is older was fenced
   * off and sends nothing. The checkpoint write fences again, for a takeover in between.
   */
  protected async checkpointBefore(batch: ChangeBatch): Promise<StoredSinkCheckpoint | null> {
    const stored = await this.state.readCheckpoint();
    if (stored && stored.epoch > batch.epoch) throw new FencedError(stored.epoch, batch.epoch);
    return stored;
  }
}
