import pg from 'pg';
import { maxLsn, normalizeLsn, parseLsn } from '../../core/lsn.js';
import { PG_TEXT_SESSION_OPTIONS } from '../../core/pg-comparison.js';
import { surviveConnectionLoss } from '../../core/pg-connection-loss.js';
import type { SourceLogger } from '../../core/source.js';
import { type PgConnectionInternals, takeOverCopyData } from './copy-data-takeover.js';
import { SlotMissingError, SourceConnectionError, sqlState } from './errors.js';
import { PgoutputStreamingPlugin } from './pgoutput-plugin.js';
import { type SlotStatus, slotStatus } from './slot.js';
import { standbyStatusUpdate } from './standby-status.js';

/**
 * Session settings of the replication connection: they fix the text form of dates, intervals and
 * floats that pgoutput sends, so values are unambiguous and lossless whatever the server's defaults.
 */
export const SOURCE_SESSION_OPTIONS = PG_TEXT_SESSION_OPTIONS;

/**
 * What the connection delivers, in the order the server sent it; an error is always last. A
 * message's payload is a view into the connection's read buffer: valid only during the call.
 */
export type ReplicationInput =
  | { kind: 'message'; payload: Buffer }
  | { kind: 'keepalive'; walEnd: bigint }
  | { kind: 'error'; error: SlotMissingError | SourceConnectionError };

/** Where the connection delivers, in the order the server sent it. */
export interface ReplicationReceiver {
  /** A message of the plugin, in `buffer` from `start` to `end`: only valid during the call. */
  message(buffer: Buffer, start: number, end: number): void;
  /** A keepalive, or the error that ends the stream. */
  input(input: Exclude<ReplicationInput, { kind: 'message' }>): void;
}

export interface ReplicationConnectionOptions {
  /** Settings of an ordinary connection to the source database (the replication flag is added). */
  connection: pg.ClientConfig;
  slotName: string;
  publicationName: string;
  startLsn: string;
  /** Period of standby status updates, in ms. Default 10 000. */
  statusIntervalMs?: number;
  /**
   * Whether `startLsn` counts as applied from the start (the default: it is the consumer's
   * durable position). False: only ack() moves the slot, as for a stream shared by consumers of
   * whom some need what is before the start.
   */
  acknowledgeStart?: boolean;
  /**
   * Reads the slot's state at the start, on a session the caller already holds: otherwise a
   * connection of its own is opened for it, one more on the source for every start.
   */
  readSlot?: (slotName: string) => Promise<SlotStatus | null>;
  /** How long to watch the slot after the connection broke, to tell a dropped slot from a network failure. Default 2000 ms. */
  slotCheckGraceMs?: number;
  logger?: SourceLogger;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Messages of the replication protocol's CopyBoth stream (see "Streaming Replication Protocol").
const XLOG_DATA = 0x77; // w: walStart, walEnd, sendTime (8 bytes each), then the plugin's message
const XLOG_DATA_HEADER = 25;
const KEEPALIVE = 0x6b; // k: walEnd, sendTime (8 bytes each), reply requested (1 byte)

/**
 * Acknowledgements are reported at most this often: under a steady stream the sink commits a
 * batch every millisecond or so, and a status update each time cost the walsender and this
 * process a wake-up and a write apiece, for a slot position that need not be that fresh. The
 * last one is reported when the interval ends, and a server's request for one is answered at once.
 */
const ACK_REPORT_INTERVAL_MS = 10;

/** A failed standby status update is logged at most this often; every one is counted. */
const STATUS_WARN_INTERVAL_MS = 60_000;

/** The parts of pg's connection the replication protocol uses, which pg's types leave out. */
interface ReplicationWire extends PgConnectionInternals {
  stream: NodeJS.ReadWriteStream & { writable: boolean; destroy(): void };
}

/**
 * One pgoutput replication connection: starts streaming from the slot, hands over each message as
 * it arrives (read straight off the CopyBoth stream: nothing is made per message but its view),
 * reports the consumer's acknowledged position, and turns failures into typed errors.
 */
export class ReplicationConnection {
  private readonly plugin: PgoutputStreamingPlugin;
  private client: pg.Client | undefined;
  private started = false;
  private closed = false;
  private failed = false;
  private lossSeen = false;
  private lastAck = 0n;
  /** The position the last status update reported. */
  private reported = 0n;
  private timer: NodeJS.Timeout | undefined;
  /** Set while acknowledgements wait for the end of ACK_REPORT_INTERVAL_MS. */
  private ackTimer: NodeJS.Timeout | undefined;
  private statusFailures = 0;
  private statusFailuresUnlogged = 0;
  private statusWarnedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly options: ReplicationConnectionOptions,
    private readonly deliver: ReplicationReceiver,
  ) {
    this.plugin = new PgoutputStreamingPlugin({ publicationNames: [options.publicationName] });
  }

  /** Connects in the background; failures arrive as an `error` input. */
  open(): void {
    void this.connect();
  }

  /** Standby status updates that could not be sent: the source keeps its WAL until one is. */
  get failedStatusUpdates(): number {
    return this.statusFailures;
  }

  private async connect(): Promise<void> {
    const slot = this.options.slotName;
    const client = new pg.Client({
      ...this.options.connection,
      replication: 'database',
      application_name: 'replicator-stream',
      options: SOURCE_SESSION_OPTIONS,
    } as pg.ClientConfig);
    this.client = client;
    client.on('error', (error) => void this.lost(error));
    // The replication session is set up while the slot's state is read: a start does not wait
    // for the one before beginning the other.
    const connected = client.connect().then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    try {
      const { readSlot } = this.options;
      const status = await (readSlot ? readSlot(slot) : this.withClient((c) => slotStatus(c, slot)));
      if (!status) return this.fail(new SlotMissingError(slot, 'does not exist'));
      if (status.walStatus === 'lost') return this.fail(new SlotMissingError(slot, 'was invalidated'));
      const confirmed = status.confirmedFlushLsn ?? '0/0';
      this.lastAck = parseLsn(
        this.options.acknowledgeStart === false ? confirmed : maxLsn(confirmed, this.options.startLsn),
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return this.fail(
        new SourceConnectionError(`cannot read the state of slot '${slot}': ${message}`, { cause: error }),
      );
    }
    try {
      const failed = await connected;
      if (failed) throw failed.error;
      if (this.closed) return;
      const wire = this.wire();
      wire.once('replicationStart', () => this.onStart());
      const read = (buffer: Buffer, start: number, end: number) => this.onCopyData(buffer, start, end);
      const broken = (error: Error) =>
        void this.lost(new SourceConnectionError(error.message, { cause: error }));
      if (!takeOverCopyData(wire, read, broken)) {
        wire.on('copyData', (message: { chunk: Buffer }) => read(message.chunk, 0, message.chunk.length));
      }
      // Settles when the server ends the stream (or rejects with its error).
      await this.plugin.start(client, slot, normalizeLsn(this.options.startLsn));
      void this.lost(new SourceConnectionError('the source ended the replication stream'));
    } catch (error) {
      void this.lost(error);
    }
  }

  private wire(): ReplicationWire {
    return (this.client as unknown as { connection: ReplicationWire }).connection;
  }

  private onStart(): void {
    this.started = true;
    this.sendStatus();
    // Replies also while reading is paused: a walsender drops a receiver silent for wal_sender_timeout.
    this.timer = setInterval(() => this.sendStatus(), this.options.statusIntervalMs ?? 10_000);
    this.timer.unref();
  }

  /** One CopyData message, in `buffer` from `start` to `end`. */
  private onCopyData(buffer: Buffer, start: number, end: number): void {
    if (this.closed) return;
    const tag = buffer[start];
    if (tag === XLOG_DATA) {
      this.deliver.message(buffer, start + XLOG_DATA_HEADER, end);
    } else if (tag === KEEPALIVE) {
      this.deliver.input({ kind: 'keepalive', walEnd: buffer.readBigUInt64BE(start + 1) });
      if (buffer[start + 17] === 1) this.sendStatus();
    }
  }

  /** Stops reading from the socket (the server then blocks on its side). */
  pause(): void {
    if (this.client) this.wire().stream.pause();
  }

  resume(): void {
    if (this.client) this.wire().stream.resume();
  }

  /** Records `lsn` as durably applied and reports it to the server as the flush position. */
  ack(lsn: bigint): void {
    if (lsn > this.lastAck) this.lastAck = lsn;
    if (this.ackTimer) return;
    this.sendStatus();
    this.ackTimer = setTimeout(() => {
      this.ackTimer = undefined;
      if (this.lastAck > this.reported) this.sendStatus();
    }, ACK_REPORT_INTERVAL_MS);
    this.ackTimer.unref();
  }

  private sendStatus(): void {
    if (!this.started || this.closed || this.lastAck === 0n) return;
    const stream = this.wire().stream;
    if (!stream.writable) {
      this.statusFailed(new Error('the replication connection is not writable'));
      return;
    }
    try {
      this.reported = this.lastAck;
      stream.write(standbyStatusUpdate(this.lastAck, Date.now()), (error) => {
        if (error) this.statusFailed(error);
      });
    } catch (error) {
      this.statusFailed(error);
    }
  }

  /**
   * Counts a standby status update that was not sent, and warns (at most once a minute): the slot
   * does not move while none gets through, and the source keeps all of its WAL from there.
   */
  private statusFailed(error: unknown): void {
    if (this.closed) return;
    this.statusFailures++;
    this.statusFailuresUnlogged++;
    const now = Date.now();
    if (now - this.statusWarnedAt < STATUS_WARN_INTERVAL_MS) return;
    this.options.logger?.warn(
      {
        err: error,
        slot: this.options.slotName,
        failed: this.statusFailuresUnlogged,
        failedTotal: this.statusFailures,
        position: this.lastAck.toString(),
      },
      'could not send the standby status update: the source keeps its WAL until one gets through',
    );
    this.statusWarnedAt = now;
    this.statusFailuresUnlogged = 0;
  }

  /** Ends the connection. Safe to call twice. */
  async close(): Promise<void> {
    // What was acknowledged is reported before the end, not left to a timer that will not fire.
    clearTimeout(this.ackTimer);
    if (this.lastAck > this.reported) this.sendStatus();
    this.closed = true;
    clearInterval(this.timer);
    const client = this.client;
    if (!client) return;
    // A socket paused for backpressure would never read the server's end of the connection, and
    // the end would wait for it: what arrives from now on is dropped (onCopyData checks closed).
    this.resume();
    await Promise.race([client.end().catch(() => {}), sleep(5000)]);
    // Still open after that: the socket goes, so that no walsender is left holding the slot.
    this.wire().stream.destroy();
  }

  private fail(error: SlotMissingError | SourceConnectionError): void {
    if (this.closed || this.failed) return;
    this.failed = true;
    this.deliver.input({ kind: 'error', error });
  }

  private async lost(error: unknown): Promise<void> {
    if (this.closed || this.failed || this.lossSeen) return;
    this.lossSeen = true;
    this.fail(await this.classify(error));
  }

  private async classify(error: unknown): Promise<SlotMissingError | SourceConnectionError> {
    const slot = this.options.slotName;
    const message = error instanceof Error ? error.message : String(error);
    if (sqlState(error) === '42704' && /replication slot/i.test(message)) {
      return new SlotMissingError(slot, 'does not exist', { cause: error });
    }
    if (/can no longer get changes|has been invalidated|has already been removed/i.test(message)) {
      return new SlotMissingError(slot, `was invalidated (${message})`, { cause: error });
    }
    // A dropped slot shows as a terminated walsender first; watch the slot for a moment to tell.
    const deadline = Date.now() + (this.options.slotCheckGraceMs ?? 2000);
    for (;;) {
      try {
        const status = await this.withClient((c) => slotStatus(c, slot));
        if (!status) return new SlotMissingError(slot, 'was dropped', { cause: error });
        if (status.walStatus === 'lost')
          return new SlotMissingError(slot, 'was invalidated', { cause: error });
      } catch {
        break;
      }
      if (Date.now() >= deadline) break;
      await sleep(100);
    }
    return new SourceConnectionError(`lost the replication connection: ${message}`, { cause: error });
  }

  private async withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ ...this.options.connection, application_name: 'replicator' });
    surviveConnectionLoss(client);
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end().catch(() => {});
    }
  }
}
