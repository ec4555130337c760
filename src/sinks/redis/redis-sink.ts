import type { Readable } from 'node:stream';
import { Redis, type RedisOptions } from 'ioredis';
import type { Checkpoint, Row, TableRef, TableSchema } from '../../core/change.js';
import { copyTextRows } from '../../core/copy-text.js';
import { formatLsn, parseLsn } from '../../core/lsn.js';
import {
  type ChangeBatch,
  FencedError,
  type Sink,
  type SinkContext,
  type SnapshotPartition,
} from '../../core/sink.js';
import {
  changeEnvelopes,
  envelopeText,
  type Numbering,
  readEnvelope,
  type TableCount,
} from '../change-envelope.js';
import { EnvelopeSink } from '../envelope-sink.js';
import { InFlight } from '../in-flight.js';
import { publishedBefore, unfinishedAt } from '../unfinished-transactions.js';
import { parseRedisSinkProperties, type RedisSinkConfig, streamKeyOf } from './config.js';
import { APPLY_BATCH, type LuaScript, PUBLISH_ROWS } from './scripts.js';

/** Snapshot rows published per script call: bounds how long one call keeps the server busy. */
const SNAPSHOT_CHUNK_ROWS = 500;
/** Snapshot calls sent before the first is answered: the next chunk is made while Redis runs one. */
const SNAPSHOT_CALLS_IN_FLIGHT = 4;

/** Where this pipeline's messages are durable, as the checkpoint hash records it. */
interface Written {
  lsn: bigint | null;
  /**
   * Of each table, the messages published of a transaction not finished at the checkpoint (one
   * too large for a batch, written in pieces under the checkpoint before it), by `tablePath`.
   */
  unfinished: Numbering;
}

/** A sink publishing each change as a JSON envelope to Redis streams (see docs/sinks/redis.md). */
export function createRedisSink(ctx: SinkContext<RedisOptions>): Sink {
  return new RedisSink(ctx, parseRedisSinkProperties(ctx.properties));
}

const partitionField = (table: TableRef, partitionId: string) =>
  JSON.stringify([table.schema, table.table, partitionId]);

/**
 * Bookkeeping lives next to the streams, under `replicator:<pipeline id>:`: the `checkpoint` hash
 * (lsn, epoch, and the transaction published in part, if any) and the `snapshot` hash of done
 * partitions. A batch is one Lua script: fencing check, every XADD and the checkpoint run
 * atomically, so a batch is published with its checkpoint or not at all.
 */
class RedisSink extends EnvelopeSink {
  private readonly client: Redis;
  private readonly checkpointKey: string;
  private readonly snapshotKey: string;
  /** Numbering of each table's last transaction, carried from batch to batch. */
  private numbering: Numbering = new Map();
  private written: Written | null = null;
  private closed = false;
  private lastError: Error | undefined;

  constructor(
    ctx: SinkContext<RedisOptions>,
    private readonly config: RedisSinkConfig,
  ) {
    super();
    // No reconnection: a lost connection fails the call under way, and the runtime opens the sink again.
    this.client = new Redis({
      ...ctx.connection,
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    // Errors surface through the commands that meet them; the last one explains a failed connect.
    this.client.on('error', (error: Error) => {
      this.lastError = error;
    });
    this.checkpointKey = `replicator:${ctx.pipelineId}:checkpoint`;
    this.snapshotKey = `replicator:${ctx.pipelineId}:snapshot`;
  }

  async open(tables: TableSchema[]): Promise<void> {
    if (this.client.status === 'wait') {
      const { host, port } = this.client.options;
      try {
        await this.client.connect();
        await this.client.ping();
      } catch (error) {
        this.client.disconnect();
        // ioredis rejects with "Connection is closed"; the socket's own error says why.
        const why = this.lastError ?? (error as Error);
        throw new Error(`cannot reach Redis at ${host}:${port}: ${why.message}`, { cause: why });
      }
    }
    this.know(tables);
  }

  async readCheckpoint(): Promise<Checkpoint | null> {
    const [lsn, epoch] = await this.client.hmget(this.checkpointKey, 'lsn', 'epoch');
    return lsn ? { lsn: parseLsn(lsn), epoch: Number(epoch ?? 0) } : null;
  }

  async snapshotPartitionsDone(): Promise<SnapshotPartition[]> {
    const fields = await this.client.hkeys(this.snapshotKey);
    return fields.map((field) => {
      const [schema, table, partitionId] = JSON.parse(field) as [string, string, string];
      return { table: { schema, table }, partitionId };
    });
  }

  /** Forgets the table's partition markers; its stream is the consumers' and stays as it is. */
  async resetTable(table: TableSchema): Promise<void> {
    const fields = (await this.client.hkeys(this.snapshotKey)).filter((field) => {
      const [schema, name] = JSON.parse(field) as [string, string];
      return schema === table.schema && name === table.table;
    });
    if (fields.length > 0) await this.client.hdel(this.snapshotKey, ...fields);
  }

  /**
   * Publishes the partition's rows as `read` messages in chunks, several calls in flight on the
   * connection; the last chunk and the done marker go together, sent once every chunk before it
   * was answered, so a partition is marked done only with all its rows in the stream. Chunks
   * published before a failure are published again with the partition, under the same ids (a
   * read's id is its table and key).
   */
  async writeSnapshotPartition(
    table: TableSchema,
    partition: SnapshotPartition,
    copyText: Readable,
  ): Promise<number> {
    const stream = streamKeyOf(this.config, table);
    const calls = new InFlight(SNAPSHOT_CALLS_IN_FLIGHT);
    let rows = 0;
    let held: Row[] = [];
    for await (const chunk of copyTextRows(copyText, table.columns, SNAPSHOT_CHUNK_ROWS)) {
      if (held.length > 0) {
        const rowsOfChunk = held;
        await calls.add(() => this.publishRows(table, stream, rowsOfChunk, ''));
      }
      held = chunk;
      rows += chunk.length;
    }
    await calls.settle();
    await this.publishRows(table, stream, held, partitionField(table, partition.partitionId), rows);
    return rows;
  }

  private async publishRows(
    table: TableSchema,
    stream: string,
    rows: Row[],
    marker: string,
    total = 0,
  ): Promise<void> {
    const messages = rows.map((row) => envelopeText(readEnvelope(table, row)));
    await this.run(
      PUBLISH_ROWS,
      [this.snapshotKey, stream],
      [this.config.maxlen, marker, total, ...messages],
    );
  }

  async applyBatch(batch: ChangeBatch): Promise<void> {
    const written = await this.writtenState();
    const { envelopes, numbering } = changeEnvelopes(
      batch.changes,
      (ref) => this.schemaOf(ref),
      this.numbering,
    );
    const fresh = envelopes.filter((e) => !publishedBefore(e, written.unfinished));
    // The hash is the checkpoint, written as it is: it must never move back.
    const lsn = written.lsn !== null && written.lsn > batch.commitLsn ? written.lsn : batch.commitLsn;
    const unfinished = unfinishedAt(lsn, written.unfinished, numbering);

    const streams = new Map<string, number>();
    const pairs: (string | number)[] = [];
    for (const { table, envelope } of fresh) {
      const key = streamKeyOf(this.config, table);
      let index = streams.get(key);
      if (index === undefined) {
        // KEYS[1] is the checkpoint: streams are KEYS[2], KEYS[3], …
        index = streams.size + 2;
        streams.set(key, index);
      }
      pairs.push(index, envelopeText(envelope));
    }
    const stored = await this.run(
      APPLY_BATCH,
      [this.checkpointKey, ...streams.keys()],
      [
        batch.epoch,
        formatLsn(lsn),
        unfinished.size === 0 ? '' : JSON.stringify(Object.fromEntries(unfinished)),
        this.config.maxlen,
        ...pairs,
      ],
    );
    if (Number(stored) > 0) throw new FencedError(Number(stored), batch.epoch);
    this.numbering = numbering;
    this.written = { lsn, unfinished };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.client.status === 'ready') await this.client.quit().catch(() => this.client.disconnect());
    else this.client.disconnect();
  }

  /** The checkpoint hash as this sink last wrote or read it. */
  private async writtenState(): Promise<Written> {
    if (this.written) return this.written;
    const [lsn, unfinished] = await this.client.hmget(this.checkpointKey, 'lsn', 'unfinished');
    const written: Written = {
      lsn: lsn ? parseLsn(lsn) : null,
      unfinished: new Map(Object.entries(JSON.parse(unfinished ?? '{}') as Record<string, TableCount>)),
    };
    this.written = written;
    return written;
  }

  /** Runs a script by its SHA-1, sending its text the first time the server lacks it. */
  private async run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<unknown> {
    // One array argument, not spread: a batch may have more arguments than a call can take.
    try {
      return await this.client.call('EVALSHA', [script.sha, keys.length, ...keys, ...args]);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return await this.client.call('EVAL', [script.text, keys.length, ...keys, ...args]);
    }
  }
}
