import pg from 'pg';
import { LogicalReplicationService } from 'pg-logical-replication';
import { formatLsn, maxLsn, normalizeLsn, parseLsn } from '../../core/lsn.js';
import { PG_TEXT_SESSION_OPTIONS } from '../../core/pg-comparison.js';
import { surviveConnectionLoss } from '../../core/pg-connection-loss.js';
import { SlotMissingError, SourceConnectionError, sqlState } from './errors.js';
import { PgoutputStreamingPlugin } from './pgoutput-plugin.js';
import { slotStatus } from './slot.js';

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

export interface ReplicationConnectionOptions {
  /** Settings of an ordinary connection to the source database (the replication flag is added). */
  connection: pg.ClientConfig;
  slotName: string;
  publicationName: string;
  startLsn: string;
  /** Period of standby status updates, in ms. Default 10 000. */
  statusIntervalMs?: number;
  /** How long to watch the slot after the connection broke, to tell a dropped slot from a network failure. Default 2000 ms. */
  slotCheckGraceMs?: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One pgoutput replication connection through pg-logical-replication: starts streaming from the
 * slot, reports the consumer's acknowledged position, and turns failures into typed errors.
 */
export class ReplicationConnection {
  private readonly service: LogicalReplicationService;
  private readonly plugin: PgoutputStreamingPlugin;
  private started = false;
  private closed = false;
  private failed = false;
  private lossSeen = false;
  private lastAck = 0n;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: ReplicationConnectionOptions,
    private readonly deliver: (input: ReplicationInput) => void,
  ) {
    this.plugin = new PgoutputStreamingPlugin({ publicationNames: [options.publicationName] });
    this.service = new LogicalReplicationService(
      { ...options.connection, application_name: 'replicator-stream', options: SOURCE_SESSION_OPTIONS },
      // Acks only when the consumer says so, and no timer acking what was merely received.
      { acknowledge: { auto: false, timeoutSeconds: 0 } },
    );
  }

  /** Connects in the background; failures arrive as an `error` input. */
  open(): void {
    this.service.on('data', (_lsn: string, payload: Buffer) => {
      if (!this.closed) this.deliver({ kind: 'message', payload });
    });
    this.service.on('heartbeat', (walEnd: string, _time: number, shouldRespond: boolean) => {
      if (!this.closed) this.deliver({ kind: 'keepalive', walEnd: parseLsn(walEnd) });
      if (shouldRespond) this.sendStatus();
    });
    this.service.on('start', () => {
      this.started = true;
      this.sendStatus();
      // Replies also while reading is paused: a walsender drops a receiver silent for wal_sender_timeout.
      this.timer = setInterval(() => this.sendStatus(), this.options.statusIntervalMs ?? 10_000);
      this.timer.unref();
    });
    this.service.on('error', (error: Error) => void this.lost(error));
    void this.connect();
  }

  private async connect(): Promise<void> {
    const slot = this.options.slotName;
    try {
      const status = await this.withClient((c) => slotStatus(c, slot));
      if (!status) return this.fail(new SlotMissingError(slot, 'does not exist'));
      if (status.walStatus === 'lost') return this.fail(new SlotMissingError(slot, 'was invalidated'));
      this.lastAck = parseLsn(maxLsn(status.confirmedFlushLsn ?? '0/0', this.options.startLsn));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return this.fail(
        new SourceConnectionError(`cannot read the state of slot '${slot}': ${message}`, { cause: error }),
      );
    }
    if (this.closed) return;
    this.service.subscribe(this.plugin, slot, normalizeLsn(this.options.startLsn)).then(
      () => void this.lost(new SourceConnectionError('the source ended the replication stream')),
      (error: unknown) => void this.lost(error),
    );
  }

  /** Stops reading from the socket (the server then blocks on its side). */
  pause(): void {
    this.plugin.client?.connection.stream.pause();
  }

  resume(): void {
    this.plugin.client?.connection.stream.resume();
  }

  /** Records `lsn` as durably applied and reports it to the server as the flush position. */
  ack(lsn: bigint): void {
    if (lsn > this.lastAck) this.lastAck = lsn;
    this.sendStatus();
  }

  // The library reports "last byte received + 1", so it is given lsn - 1 to send exactly lsn:
  // a flush position past a commit's end LSN could make the server skip the next transaction.
  private sendStatus(): void {
    if (!this.started || this.closed || this.lastAck === 0n) return;
    this.service.acknowledge(formatLsn(this.lastAck - 1n)).catch(() => {});
  }

  /** Ends the connection. Safe to call twice. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await Promise.race([this.service.stop().catch(() => {}), sleep(5000)]);
  }

  private fail(error: SlotMissingError | SourceConnectionError): void {
    if (this.closed || this.failed) return;
    this.failed = true;
    this.deliver({ kind: 'error', error });
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
