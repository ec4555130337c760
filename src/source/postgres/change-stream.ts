import type { ChangeEvent } from '../../core/change.js';
import { BoundedQueue } from './bounded-queue.js';
import { type CommitInfo, RelationCache, toChangeEvent } from './change-mapper.js';
import { PgoutputProtocolError } from './errors.js';
import { formatLsn, parseLsn } from './lsn.js';
import type { PgoutputMessage, RelationInfo } from './pgoutput-decoder.js';
import type { DecodeFailure } from './pgoutput-plugin.js';
import {
  ReplicationConnection,
  type ReplicationConnectionOptions,
  type ReplicationInput,
} from './replication-connection.js';
import { SpoolDirectory, TransactionSpool } from './transaction-spool.js';

export { SOURCE_SESSION_OPTIONS } from './replication-connection.js';

/** What the change stream yields, in commit order; a transaction's items are never interleaved with another's. */
export type StreamItem =
  | { kind: 'begin'; xid: number; commitLsn: string; commitTime: string }
  | { kind: 'relation'; relation: RelationInfo }
  | { kind: 'change'; change: ChangeEvent }
  | { kind: 'commit'; xid: number; commitLsn: string; commitTime: string }
  /** No transaction is open and the server has sent everything up to `walEnd`: safe to ack it when nothing is in flight. */
  | { kind: 'idle'; walEnd: string };

/** Pino-compatible logger subset. */
export interface SourceLogger {
  debug(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface ChangeStreamOptions extends ReplicationConnectionOptions {
  /** Stream transactions committed after this LSN; `0/0` for the slot's confirmed position. */
  startLsn: string;
  logger?: SourceLogger;
  /** Where transaction spool files go; the OS temp directory by default. */
  spoolDir?: string;
  /** Bytes of a non-streamed transaction held in memory before it spills to a spool file. Default 8 MiB. */
  memoryLimitBytes?: number;
  /** Stream items queued ahead of the consumer. Default 1000. */
  queueCapacity?: number;
}

export interface ChangeStreamStats {
  transactions: number;
  streamedTransactions: number;
  abortedStreamedTransactions: number;
  abortedSubtransactions: number;
  /** Non-streamed transactions too big for memory, spooled to disk. */
  spilledTransactions: number;
  /** Received messages not processed yet, now and at most. */
  bufferedMessages: number;
  maxBufferedMessages: number;
  /** Items waiting for the consumer. */
  queuedItems: number;
}

export interface ChangeStream {
  /** The items; iteration rejects with SlotMissingError, SourceConnectionError or PgoutputProtocolError. */
  items: AsyncIterable<StreamItem>;
  /** Reports `lsn` (a commit end LSN, or an idle walEnd) as durably applied: the slot may advance to it. */
  ack(lsn: string): Promise<void>;
  /** Stops replication, ends the items and deletes the spool files. */
  close(): Promise<void>;
  stats(): ChangeStreamStats;
}

// Received messages beyond which the socket is paused, and below which it resumes.
const HIGH_WATER = 1000;
const LOW_WATER = 200;

/**
 * Starts streaming the slot's changes. Transactions are yielded whole, in commit order, once
 * their commit arrived; big ones (streamed by the server, or beyond `memoryLimitBytes`) wait in
 * spool files rather than memory. Nothing is acknowledged unless ack() is called.
 */
export function startChangeStream(options: ChangeStreamOptions): ChangeStream {
  const runner = new ChangeStreamRunner(options);
  runner.start();
  return {
    items: runner.output,
    ack: async (lsn) => runner.ack(lsn),
    close: () => runner.close(),
    stats: () => runner.stats(),
  };
}

class ChangeStreamRunner {
  readonly output: BoundedQueue<StreamItem>;
  private readonly connection: ReplicationConnection;
  private readonly relations = new RelationCache();
  private readonly directory: SpoolDirectory;
  private readonly streamed = new Map<number, TransactionSpool>();
  private readonly input: ReplicationInput[] = [];
  private wake: (() => void) | undefined;
  private txn: { xid: number; spool: TransactionSpool } | undefined;
  private streamXid: number | undefined;
  private paused = false;
  private closed = false;
  private lastIdle = 0n;
  private processing: Promise<void> = Promise.resolve();
  private readonly counters = {
    transactions: 0,
    streamedTransactions: 0,
    abortedStreamedTransactions: 0,
    abortedSubtransactions: 0,
    spilledTransactions: 0,
    maxBufferedMessages: 0,
  };

  constructor(private readonly options: ChangeStreamOptions) {
    this.output = new BoundedQueue(options.queueCapacity ?? 1000);
    this.directory = new SpoolDirectory(options.spoolDir);
    this.connection = new ReplicationConnection(options, (input) => this.enqueue(input));
  }

  start(): void {
    this.processing = this.process();
    this.connection.open();
  }

  ack(lsn: string): void {
    this.connection.ack(lsn);
  }

  stats(): ChangeStreamStats {
    return { ...this.counters, bufferedMessages: this.input.length, queuedItems: this.output.length };
  }

  async close(): Promise<void> {
    this.output.end({ discard: true });
    this.closed = true;
    this.wake?.();
    await this.processing;
  }

  private enqueue(input: ReplicationInput): void {
    if (this.closed) return;
    this.input.push(input);
    this.counters.maxBufferedMessages = Math.max(this.counters.maxBufferedMessages, this.input.length);
    if (this.input.length >= HIGH_WATER && !this.paused) {
      this.paused = true;
      this.connection.pause();
    }
    this.wake?.();
  }

  private async nextInput(): Promise<ReplicationInput | undefined> {
    while (this.input.length === 0 && !this.closed) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
    if (this.closed) return undefined;
    const input = this.input.shift();
    if (this.paused && this.input.length <= LOW_WATER) {
      this.paused = false;
      this.connection.resume();
    }
    return input;
  }

  /** The one consumer of received messages: decodes, spools and replays them in order. */
  private async process(): Promise<void> {
    try {
      for (;;) {
        const input = await this.nextInput();
        if (!input) return;
        if (input.kind === 'error') throw input.error;
        if (input.kind === 'keepalive') await this.onKeepalive(input.walEnd);
        else await this.onMessage(input.lsn, input.message);
      }
    } catch (error) {
      this.output.fail(error);
    } finally {
      await this.shutdown();
    }
  }

  private async shutdown(): Promise<void> {
    this.closed = true;
    await this.connection.close();
    const spools = [...this.streamed.values(), ...(this.txn ? [this.txn.spool] : [])];
    this.streamed.clear();
    this.txn = undefined;
    await Promise.all(spools.map((s) => s.dispose()));
    await this.directory.remove();
  }

  private async emit(item: StreamItem): Promise<boolean> {
    return this.output.push(item);
  }

  private async onKeepalive(walEnd: string): Promise<void> {
    // Inside a transaction (or a stream block) the server may not have sent all of it yet. A
    // streamed transaction still pending does not matter: its commit record lies beyond walEnd,
    // so acking walEnd cannot make the server skip it.
    if (this.txn || this.streamXid !== undefined) return;
    const value = parseLsn(walEnd);
    if (value <= this.lastIdle) return;
    this.lastIdle = value;
    await this.emit({ kind: 'idle', walEnd: formatLsn(value) });
  }

  private async onMessage(lsn: string, m: PgoutputMessage | DecodeFailure): Promise<void> {
    switch (m.tag) {
      case 'decode-error':
        throw m.error;
      case 'begin': {
        if (this.txn || this.streamXid !== undefined) {
          throw new PgoutputProtocolError('Begin inside a transaction');
        }
        const memoryLimit = this.options.memoryLimitBytes ?? 8 << 20;
        this.txn = { xid: m.xid, spool: new TransactionSpool(this.directory, `xid-${m.xid}`, memoryLimit) };
        return;
      }
      case 'commit': {
        const txn = this.txn;
        if (!txn) throw new PgoutputProtocolError('Commit without Begin');
        this.txn = undefined;
        if (txn.spool.spilled) this.counters.spilledTransactions++;
        await this.replay(txn.spool, { xid: txn.xid, commitLsn: m.endLsn, commitTime: m.commitTime });
        return;
      }
      case 'stream-start': {
        if (this.txn || this.streamXid !== undefined) {
          throw new PgoutputProtocolError('Stream Start inside a transaction');
        }
        this.streamXid = m.xid;
        if (this.streamed.has(m.xid)) return;
        // A later segment of an unknown transaction means its first changes were never seen.
        if (!m.firstSegment) throw new PgoutputProtocolError(`Stream Start of unknown transaction ${m.xid}`);
        this.streamed.set(m.xid, new TransactionSpool(this.directory, `stream-${m.xid}`, 0));
        this.options.logger?.debug({ xid: m.xid }, 'spooling a streamed in-progress transaction');
        return;
      }
      case 'stream-stop':
        this.streamXid = undefined;
        return;
      case 'stream-commit': {
        let spool = this.streamed.get(m.xid);
        if (!spool) {
          this.options.logger?.warn({ xid: m.xid }, 'Stream Commit of a transaction that streamed no change');
          spool = new TransactionSpool(this.directory, `stream-${m.xid}`, 0);
        }
        this.streamed.delete(m.xid);
        this.counters.streamedTransactions++;
        await this.replay(spool, { xid: m.xid, commitLsn: m.endLsn, commitTime: m.commitTime });
        return;
      }
      case 'stream-abort': {
        const spool = this.streamed.get(m.xid);
        if (m.subxid === m.xid) {
          this.streamed.delete(m.xid);
          this.counters.abortedStreamedTransactions++;
          await spool?.dispose();
        } else {
          this.counters.abortedSubtransactions++;
          spool?.abortSubtransaction(m.subxid);
        }
        return;
      }
      case 'relation':
      case 'insert':
      case 'update':
      case 'delete':
      case 'truncate': {
        if (this.streamXid !== undefined) {
          const spool = this.streamed.get(this.streamXid) as TransactionSpool;
          await spool.append({ lsn, xid: m.xid ?? this.streamXid, message: m });
        } else if (this.txn) {
          await this.txn.spool.append({ lsn, xid: this.txn.xid, message: m });
        } else if (m.tag === 'relation') {
          this.relations.set(m);
          await this.emit({ kind: 'relation', relation: relationInfo(m) });
        } else {
          throw new PgoutputProtocolError(`${m.tag} outside a transaction`);
        }
        return;
      }
      default:
        // Origin, Type and logical decoding messages carry nothing a sink applies.
        return;
    }
  }

  /** Yields a committed transaction from its spool, then deletes the spool. */
  private async replay(spool: TransactionSpool, commit: CommitInfo): Promise<void> {
    try {
      if (!(await this.emit({ kind: 'begin', ...commit }))) return;
      for await (const { lsn, message } of spool.replay()) {
        const item: StreamItem =
          message.tag === 'relation'
            ? { kind: 'relation', relation: relationInfo(message) }
            : { kind: 'change', change: toChangeEvent(message, lsn, this.relations, commit) };
        if (message.tag === 'relation') this.relations.set(message);
        if (!(await this.emit(item))) return;
      }
      if (await this.emit({ kind: 'commit', ...commit })) this.counters.transactions++;
    } finally {
      await spool.dispose();
    }
  }
}

function relationInfo(m: RelationInfo): RelationInfo {
  return {
    relationId: m.relationId,
    schema: m.schema,
    table: m.table,
    replicaIdentity: m.replicaIdentity,
    columns: m.columns,
  };
}
