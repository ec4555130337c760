import { valueBytes } from '../../core/change.js';
import type { ChangeStream, ChangeStreamStats, StreamItem } from '../../core/change-stream.js';
import type { RelationInfo } from './pgoutput-decoder.js';
import {
  ReplicationConnection,
  type ReplicationConnectionOptions,
  type ReplicationInput,
} from './replication-connection.js';
import { TransactionAssembler } from './transaction-assembler.js';

export { SOURCE_SESSION_OPTIONS } from './replication-connection.js';

/** The core's stream items, a relation carrying all that pgoutput says of it (its replica identity too). */
export type PostgresStreamItem =
  | Exclude<StreamItem, { kind: 'relation' }>
  | { kind: 'relation'; relation: RelationInfo };

export interface ChangeStreamOptions extends ReplicationConnectionOptions {
  /** Stream transactions committed after this LSN; `0/0` for the slot's confirmed position. */
  startLsn: string;
  /** Where spool files of streamed transactions go; the OS temp directory by default. */
  spoolDir?: string;
  /** Bytes of a streamed transaction held in memory before it spills to a spool file. Default 8 MiB. */
  memoryLimitBytes?: number;
  /** Items decoded ahead of the consumer before the socket is paused. Default 5 000. */
  queueCapacity?: number;
  /**
   * Bytes of messages decoded ahead of the consumer (or held during a replay) before the socket is
   * paused, whatever their count: 5,000 rows of a megabyte each would otherwise all be read ahead.
   * Default 16 MiB.
   */
  queueBytes?: number;
  /** Also hands over the first streamed transaction in progress as it arrives (see TransactionAssembler). */
  live?: boolean;
}

/** The core's counters, and what a pgoutput stream counts besides. */
export interface PostgresStreamStats extends ChangeStreamStats {
  abortedStreamedTransactions: number;
  abortedSubtransactions: number;
  /** Received messages held while a streamed transaction replays, now and at most. */
  bufferedMessages: number;
  maxBufferedMessages: number;
}

/** The core's change stream; it also rejects with PgoutputProtocolError, and close() deletes the spool files. */
export interface PostgresChangeStream extends ChangeStream {
  next(): Promise<PostgresStreamItem[] | null>;
  stats(): PostgresStreamStats;
}

/**
 * Starts streaming the slot's changes. Each received message is decoded synchronously, straight
 * into change events, and the consumer takes all decoded items at once. A transaction that was
 * not streamed is committed by the time the server sends it (logical decoding replays it at its
 * commit), so its changes are handed over as they arrive; a streamed (in-progress) transaction
 * waits in a spool until its Stream Commit and is then replayed. Nothing is acknowledged unless
 * ack() is called.
 */
export function startChangeStream(options: ChangeStreamOptions): PostgresChangeStream {
  const runner = new ChangeStreamRunner(options);
  runner.start();
  return {
    next: () => runner.next(),
    ack: (lsn) => runner.ack(lsn),
    close: () => runner.close(),
    stats: () => runner.stats(),
  };
}

/**
 * The connection side of a change stream: feeds what the server sends to the transaction
 * assembler, hands its items to the consumer in arrays, pauses the socket while the consumer lags
 * or a streamed transaction replays, and holds what arrives during a replay until it ends.
 */
class ChangeStreamRunner {
  private readonly connection: ReplicationConnection;
  private readonly assembler: TransactionAssembler;
  private readonly highWater: number;
  private readonly highWaterBytes: number;
  private ready: PostgresStreamItem[] = [];
  // Bytes of the messages whose items wait in `ready`; those of the message being decoded until
  // it yields an item (a message spooled for a streamed transaction yields none).
  private readyBytes = 0;
  private acceptingBytes = 0;
  private consumer:
    | { resolve: (items: PostgresStreamItem[] | null) => void; reject: (e: unknown) => void }
    | undefined;
  private handoverQueued = false;
  private consumed: (() => void) | undefined;
  private failure: { error: unknown } | undefined;
  private closed = false;
  // Inputs that arrive while a streamed transaction replays, handled after it.
  private held: ReplicationInput[] = [];
  private heldBytes = 0;
  private replaying = false;
  private paused = false;
  private maxBufferedMessages = 0;
  private shutdownDone: Promise<void> | undefined;

  constructor(options: ChangeStreamOptions) {
    this.highWater = options.queueCapacity ?? 5_000;
    this.highWaterBytes = options.queueBytes ?? 16 * 1024 * 1024;
    this.assembler = new TransactionAssembler({
      emit: (item) => this.push(item),
      spoolDir: options.spoolDir,
      memoryLimitBytes: options.memoryLimitBytes,
      logger: options.logger,
      live: options.live ?? false,
    });
    this.connection = new ReplicationConnection(options, {
      message: (buffer, start, end) => this.onMessage(buffer, start, end),
      input: (input) => this.onInput(input),
    });
  }

  start(): void {
    this.connection.open();
  }

  next(): Promise<PostgresStreamItem[] | null> {
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

  stats(): PostgresStreamStats {
    return {
      ...this.assembler.stats(),
      bufferedMessages: this.held.length,
      maxBufferedMessages: this.maxBufferedMessages,
      queuedItems: this.ready.length,
      queuedBytes: this.readyBytes,
      failedStatusUpdates: this.connection.failedStatusUpdates,
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.ready = [];
    this.consumer?.resolve(null);
    this.consumer = undefined;
    this.consumed?.();
    await this.shutdown();
  }

  private take(): PostgresStreamItem[] {
    const items = this.ready;
    this.ready = [];
    this.readyBytes = 0;
    this.consumed?.();
    this.consumed = undefined;
    this.updateFlow();
    return items;
  }

  private push(item: PostgresStreamItem, bytes = this.acceptingBytes): void {
    this.ready.push(item);
    this.readyBytes += bytes;
    this.acceptingBytes = 0;
    // Handed over once the received chunk is decoded whole, not item by item.
    if (this.consumer && !this.handoverQueued) {
      this.handoverQueued = true;
      queueMicrotask(() => this.handover());
    }
    if (this.full()) this.updateFlow();
  }

  /** Whether the consumer has a queue's worth waiting, in items or in bytes. */
  private full(): boolean {
    return this.ready.length >= this.highWater || this.readyBytes >= this.highWaterBytes;
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
    const pause =
      this.replaying ||
      this.full() ||
      this.held.length >= this.highWater ||
      this.heldBytes >= this.highWaterBytes;
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
      this.assembler.dispose();
    })();
    return this.shutdownDone;
  }

  /** A message as it arrives: decoded in place, unless a replay holds the stream. */
  private onMessage(buffer: Buffer, start: number, end: number): void {
    if (this.closed || this.failure) return;
    // A message is only valid during the call: a held one is copied.
    if (this.holding()) this.hold({ kind: 'message', payload: Buffer.from(buffer.subarray(start, end)) });
    else this.accept(buffer, start, end);
  }

  private onInput(input: ReplicationInput): void {
    if (this.closed || this.failure) return;
    if (this.holding()) this.hold(input);
    else this.handle(input);
  }

  /** Whether what arrives waits: a streamed transaction replays, or what arrived during one is not handled yet. */
  private holding(): boolean {
    return this.replaying || this.held.length > 0;
  }

  private hold(input: ReplicationInput): void {
    this.held.push(input);
    if (input.kind === 'message') this.heldBytes += input.payload.length;
    this.maxBufferedMessages = Math.max(this.maxBufferedMessages, this.held.length);
    this.updateFlow();
  }

  private handle(input: ReplicationInput): void {
    if (input.kind === 'message') {
      this.accept(input.payload, 0, input.payload.length);
      return;
    }
    try {
      if (input.kind === 'error') throw input.error;
      this.assembler.keepalive(input.walEnd);
    } catch (error) {
      this.fail(error);
    }
  }

  private accept(buffer: Buffer, start: number, end: number): void {
    try {
      this.acceptingBytes = end - start;
      const replay = this.assembler.accept(buffer, start, end);
      this.acceptingBytes = 0;
      if (replay) void this.replay(replay);
    } catch (error) {
      this.fail(error);
    }
  }

  /**
   * Hands over a streamed transaction's items, waiting for the consumer whenever a queue's worth
   * is ready; what arrives meanwhile is held and handled after it.
   */
  private async replay(items: Generator<PostgresStreamItem, void, undefined>): Promise<void> {
    this.replaying = true;
    this.updateFlow();
    try {
      // Leaving the loop early ends the replay, which deletes its spool.
      for (const item of items) {
        this.push(item, replayedBytes(item));
        if (item.kind === 'stream-commit') {
          // The replay goes on (or ends) by the consumer's verdict on what it had as it arrived.
          await item.verdict.decided;
          if (this.closed || this.failure) return;
        } else if (this.full()) {
          await new Promise<void>((resolve) => {
            this.consumed = resolve;
          });
          if (this.closed || this.failure) return;
        }
      }
    } catch (error) {
      this.fail(error);
      return;
    }
    this.replaying = false;
    while (!this.replaying && this.held.length > 0 && !this.failure && !this.closed) {
      const input = this.held.shift() as ReplicationInput;
      if (input.kind === 'message') this.heldBytes -= input.payload.length;
      this.handle(input);
    }
    this.updateFlow();
  }
}

/** About the bytes a replayed item's message had, as a batch counts a change (the spool gives no sizes). */
const replayedBytes = (item: PostgresStreamItem): number =>
  item.kind === 'change' || item.kind === 'stream-change' ? valueBytes(item.change) : 16;
