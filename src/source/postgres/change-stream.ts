import type { ChangeEvent } from '../../core/change.js';
import { decodeChange, RelationCache, type TransactionInfo } from './change-mapper.js';
import { PgoutputProtocolError } from './errors.js';
import { formatLsn } from './lsn.js';
import {
  pgTimestampToIso,
  pgTimestampToUnixMs,
  Reader,
  type RelationInfo,
  readRelation,
} from './pgoutput-decoder.js';
import {
  ReplicationConnection,
  type ReplicationConnectionOptions,
  type ReplicationInput,
} from './replication-connection.js';
import { SpoolDirectory, StreamSpool } from './stream-spool.js';

export { SOURCE_SESSION_OPTIONS } from './replication-connection.js';

/** What the change stream yields, in commit order; a transaction's items are never interleaved with another's. */
export type StreamItem =
  | { kind: 'begin'; xid: number; commitTimeMs: number }
  | { kind: 'relation'; relation: RelationInfo }
  | { kind: 'change'; change: ChangeEvent }
  /** `endLsn`: the end of the commit record, the position to acknowledge once the transaction is durable. */
  | { kind: 'commit'; xid: number; endLsn: bigint }
  /** No transaction is open and the server has sent everything up to `walEnd`: safe to ack it when nothing is in flight. */
  | { kind: 'idle'; walEnd: bigint };

/** Pino-compatible logger subset. */
export interface SourceLogger {
  debug(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface ChangeStreamOptions extends ReplicationConnectionOptions {
  /** Stream transactions committed after this LSN; `0/0` for the slot's confirmed position. */
  startLsn: string;
  logger?: SourceLogger;
  /** Where spool files of streamed transactions go; the OS temp directory by default. */
  spoolDir?: string;
  /** Bytes of a streamed transaction held in memory before it spills to a spool file. Default 8 MiB. */
  memoryLimitBytes?: number;
  /** Items decoded ahead of the consumer before the socket is paused. Default 20 000. */
  queueCapacity?: number;
}

export interface ChangeStreamStats {
  transactions: number;
  streamedTransactions: number;
  abortedStreamedTransactions: number;
  abortedSubtransactions: number;
  /** Streamed transactions too big for memory, spooled to disk. */
  spilledTransactions: number;
  /** Received messages held while a streamed transaction replays, now and at most. */
  bufferedMessages: number;
  maxBufferedMessages: number;
  /** Items waiting for the consumer. */
  queuedItems: number;
}

export interface ChangeStream {
  /**
   * Every item that arrived since the last call, in order (waits while there is none); null once
   * closed. Rejects with SlotMissingError, SourceConnectionError or PgoutputProtocolError, after
   * the items that came before the failure.
   */
  next(): Promise<StreamItem[] | null>;
  /** Reports `lsn` (a commit end LSN, or an idle walEnd) as durably applied: the slot may advance to it. */
  ack(lsn: bigint): void;
  /** Stops replication, ends the items and deletes the spool files. */
  close(): Promise<void>;
  stats(): ChangeStreamStats;
}

const TAG = {
  begin: 0x42, // B
  commit: 0x43, // C
  relation: 0x52, // R
  insert: 0x49, // I
  update: 0x55, // U
  delete: 0x44, // D
  truncate: 0x54, // T
  streamStart: 0x53, // S
  streamStop: 0x45, // E
  streamCommit: 0x63, // c
  streamAbort: 0x41, // A
  type: 0x59, // Y
  origin: 0x4f, // O
  message: 0x4d, // M
} as const;

/**
 * Starts streaming the slot's changes. Each received message is decoded synchronously, straight
 * into change events, and the consumer takes all decoded items at once. A transaction that was
 * not streamed is committed by the time the server sends it (logical decoding replays it at its
 * commit), so its changes are handed over as they arrive; a streamed (in-progress) transaction
 * waits in a spool until its Stream Commit and is then replayed. Nothing is acknowledged unless
 * ack() is called.
 */
export function startChangeStream(options: ChangeStreamOptions): ChangeStream {
  const runner = new ChangeStreamRunner(options);
  runner.start();
  return {
    next: () => runner.next(),
    ack: (lsn) => runner.ack(lsn),
    close: () => runner.close(),
    stats: () => runner.stats(),
  };
}

class ChangeStreamRunner {
  private readonly connection: ReplicationConnection;
  private readonly relations = new RelationCache();
  private readonly directory: SpoolDirectory;
  private readonly streamed = new Map<number, StreamSpool>();
  private readonly highWater: number;
  private ready: StreamItem[] = [];
  private consumer:
    | { resolve: (items: StreamItem[] | null) => void; reject: (e: unknown) => void }
    | undefined;
  private handoverQueued = false;
  private consumed: (() => void) | undefined;
  private failure: { error: unknown } | undefined;
  private closed = false;
  // Inputs that arrive while a streamed transaction replays, handled after it.
  private held: ReplicationInput[] = [];
  private replaying = false;
  private paused = false;
  private txn: TransactionInfo | undefined;
  private streamXid: number | undefined;
  private lastIdle = 0n;
  private shutdownDone: Promise<void> | undefined;
  private readonly counters = {
    transactions: 0,
    streamedTransactions: 0,
    abortedStreamedTransactions: 0,
    abortedSubtransactions: 0,
    spilledTransactions: 0,
    maxBufferedMessages: 0,
  };

  constructor(private readonly options: ChangeStreamOptions) {
    this.highWater = options.queueCapacity ?? 20_000;
    this.directory = new SpoolDirectory(options.spoolDir);
    this.connection = new ReplicationConnection(options, (input) => this.onInput(input));
  }

  start(): void {
    this.connection.open();
  }

  next(): Promise<StreamItem[] | null> {
    if (this.ready.length > 0) return Promise.resolve(this.take());
    if (this.failure) return Promise.reject(this.failure.error);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      this.consumer = { resolve, reject };
    });
  }

  ack(lsn: bigint): void {
    this.connection.ack(lsn);
  }

  stats(): ChangeStreamStats {
    return { ...this.counters, bufferedMessages: this.held.length, queuedItems: this.ready.length };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.ready = [];
    this.consumer?.resolve(null);
    this.consumer = undefined;
    this.consumed?.();
    await this.shutdown();
  }

  private take(): StreamItem[] {
    const items = this.ready;
    this.ready = [];
    this.consumed?.();
    this.consumed = undefined;
    this.updateFlow();
    return items;
  }

  private push(item: StreamItem): void {
    this.ready.push(item);
    // Handed over once the received chunk is decoded whole, not item by item.
    if (this.consumer && !this.handoverQueued) {
      this.handoverQueued = true;
      queueMicrotask(() => this.handover());
    }
    if (this.ready.length === this.highWater) this.updateFlow();
  }

  private handover(): void {
    this.handoverQueued = false;
    const consumer = this.consumer;
    if (!consumer || this.ready.length === 0) return;
    this.consumer = undefined;
    consumer.resolve(this.take());
  }

  /** Pauses the socket while a replay runs or the consumer lags, and resumes it after. */
  private updateFlow(): void {
    const pause = this.replaying || this.ready.length >= this.highWater || this.held.length >= this.highWater;
    if (pause && !this.paused) this.connection.pause();
    else if (!pause && this.paused) this.connection.resume();
    this.paused = pause;
  }

  private fail(error: unknown): void {
    if (this.failure || this.closed) return;
    this.failure = { error };
    const consumer = this.consumer;
    this.consumer = undefined;
    if (consumer) {
      if (this.ready.length > 0) consumer.resolve(this.take());
      else consumer.reject(error);
    }
    this.consumed?.();
    void this.shutdown();
  }

  private shutdown(): Promise<void> {
    this.shutdownDone ??= (async () => {
      await this.connection.close();
      for (const spool of this.streamed.values()) spool.dispose();
      this.streamed.clear();
      this.txn = undefined;
      this.directory.remove();
    })();
    return this.shutdownDone;
  }

  private onInput(input: ReplicationInput): void {
    if (this.closed || this.failure) return;
    if (this.replaying || this.held.length > 0) {
      // A payload is only valid during the call: a held one is copied.
      this.held.push(
        input.kind === 'message' ? { kind: 'message', payload: Buffer.from(input.payload) } : input,
      );
      this.counters.maxBufferedMessages = Math.max(this.counters.maxBufferedMessages, this.held.length);
      this.updateFlow();
      return;
    }
    this.handle(input);
  }

  private handle(input: ReplicationInput): void {
    try {
      if (input.kind === 'error') throw input.error;
      if (input.kind === 'keepalive') this.onKeepalive(input.walEnd);
      else this.onMessage(input.payload);
    } catch (error) {
      this.fail(error);
    }
  }

  private onKeepalive(walEnd: bigint): void {
    // Inside a transaction (or a stream block) the server may not have sent all of it yet. A
    // streamed transaction still pending does not matter: its commit record lies beyond walEnd,
    // so acking walEnd cannot make the server skip it.
    if (this.txn || this.streamXid !== undefined) return;
    if (walEnd <= this.lastIdle) return;
    this.lastIdle = walEnd;
    this.push({ kind: 'idle', walEnd });
  }

  private onMessage(payload: Buffer): void {
    const tag = payload[0];
    const r = new Reader(payload, 1);
    switch (tag) {
      case TAG.begin: {
        if (this.txn || this.streamXid !== undefined)
          throw new PgoutputProtocolError('Begin inside a transaction');
        const commitLsn = formatLsn(r.lsnValue());
        const micros = r.micros();
        const xid = r.uint32();
        this.txn = { xid, commitLsn, commitTime: pgTimestampToIso(micros) };
        this.push({ kind: 'begin', xid, commitTimeMs: pgTimestampToUnixMs(micros) });
        return;
      }
      case TAG.commit: {
        const txn = this.txn;
        if (!txn) throw new PgoutputProtocolError('Commit without Begin');
        r.uint8(); // flags
        r.lsnValue(); // the commit record's LSN, given at Begin
        const endLsn = r.lsnValue();
        this.txn = undefined;
        this.counters.transactions++;
        this.push({ kind: 'commit', xid: txn.xid, endLsn });
        return;
      }
      case TAG.relation:
      case TAG.insert:
      case TAG.update:
      case TAG.delete:
      case TAG.truncate: {
        if (this.streamXid !== undefined) {
          (this.streamed.get(this.streamXid) as StreamSpool).append(payload);
        } else if (tag === TAG.relation) {
          this.onRelation(r);
        } else if (this.txn) {
          this.push({ kind: 'change', change: decodeChange(r, dataTag(tag), this.relations, this.txn) });
        } else {
          throw new PgoutputProtocolError(`${String.fromCharCode(tag)} message outside a transaction`);
        }
        return;
      }
      case TAG.streamStart: {
        if (this.txn || this.streamXid !== undefined) {
          throw new PgoutputProtocolError('Stream Start inside a transaction');
        }
        const xid = r.uint32();
        const firstSegment = r.uint8() === 1;
        this.streamXid = xid;
        if (this.streamed.has(xid)) return;
        // A later segment of an unknown transaction means its first changes were never seen.
        if (!firstSegment) throw new PgoutputProtocolError(`Stream Start of unknown transaction ${xid}`);
        this.streamed.set(xid, this.newSpool(xid));
        this.options.logger?.debug({ xid }, 'spooling a streamed in-progress transaction');
        return;
      }
      case TAG.streamStop:
        this.streamXid = undefined;
        return;
      case TAG.streamCommit: {
        const xid = r.uint32();
        r.uint8(); // flags
        const commitLsn = formatLsn(r.lsnValue());
        const endLsn = r.lsnValue();
        const micros = r.micros();
        let spool = this.streamed.get(xid);
        if (!spool) {
          this.options.logger?.warn({ xid }, 'Stream Commit of a transaction that streamed no change');
          spool = this.newSpool(xid);
        }
        this.streamed.delete(xid);
        this.counters.streamedTransactions++;
        if (spool.spilled) this.counters.spilledTransactions++;
        const txn = { xid, commitLsn, commitTime: pgTimestampToIso(micros) };
        void this.replay(spool, txn, endLsn, pgTimestampToUnixMs(micros));
        return;
      }
      case TAG.streamAbort: {
        const xid = r.uint32();
        const subxid = r.uint32();
        const spool = this.streamed.get(xid);
        if (subxid === xid) {
          this.streamed.delete(xid);
          this.counters.abortedStreamedTransactions++;
          spool?.dispose();
        } else {
          this.counters.abortedSubtransactions++;
          spool?.abortSubtransaction(subxid);
        }
        return;
      }
      case TAG.type:
      case TAG.origin:
      case TAG.message:
        // Nothing a sink applies.
        return;
      default:
        throw new PgoutputProtocolError(
          `unknown pgoutput message type '${String.fromCharCode(tag ?? 0)}' (0x${(tag ?? 0).toString(16)})`,
        );
    }
  }

  private onRelation(r: Reader): void {
    const relation = readRelation(r);
    this.relations.set(relation);
    this.push({ kind: 'relation', relation });
  }

  private newSpool(xid: number): StreamSpool {
    return new StreamSpool(this.directory, `stream-${xid}`, this.options.memoryLimitBytes ?? 8 << 20);
  }

  /**
   * Hands over a streamed transaction from its spool, waiting for the consumer whenever a queue's
   * worth is ready; what arrives meanwhile is held and handled after it.
   */
  private async replay(spool: StreamSpool, txn: TransactionInfo, endLsn: bigint, commitTimeMs: number) {
    this.replaying = true;
    this.updateFlow();
    try {
      this.push({ kind: 'begin', xid: txn.xid, commitTimeMs });
      for (const message of spool.messages()) {
        // Spooled messages carry the (sub)transaction's xid after their tag.
        const r = new Reader(message, 5);
        const tag = message[0];
        if (tag === TAG.relation) this.onRelation(r);
        else this.push({ kind: 'change', change: decodeChange(r, dataTag(tag), this.relations, txn) });
        if (this.ready.length >= this.highWater) {
          await new Promise<void>((resolve) => {
            this.consumed = resolve;
          });
          if (this.closed || this.failure) return;
        }
      }
      this.counters.transactions++;
      this.push({ kind: 'commit', xid: txn.xid, endLsn });
    } catch (error) {
      this.fail(error);
      return;
    } finally {
      spool.dispose();
    }
    this.replaying = false;
    while (!this.replaying && this.held.length > 0 && !this.failure && !this.closed) {
      this.handle(this.held.shift() as ReplicationInput);
    }
    this.updateFlow();
  }
}

function dataTag(tag: number | undefined): 'I' | 'U' | 'D' | 'T' {
  switch (tag) {
    case TAG.insert:
      return 'I';
    case TAG.update:
      return 'U';
    case TAG.delete:
      return 'D';
    case TAG.truncate:
      return 'T';
    default:
      throw new PgoutputProtocolError(
        `unexpected message '${String.fromCharCode(tag ?? 0)}' in a transaction`,
      );
  }
}
