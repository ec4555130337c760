import type { Readable } from 'node:stream';
import { jetstreamManager } from '@nats-io/jetstream';
import { type ConnectionOptions, connect, errors, type NatsConnection } from '@nats-io/transport-node';
import type { TableRef, TableSchema } from '../../core/change.js';
import { copyTextRows } from '../../core/copy-text.js';
import type { ChangeBatch, Sink, SinkContext, SnapshotPartition } from '../../core/sink.js';
import {
  type AddressedEnvelope,
  type ChangeEnvelope,
  changeEnvelopes,
  envelopeText,
  type Numbering,
  readEnvelope,
} from '../change-envelope.js';
import { ServiceKeptSink } from '../envelope-sink.js';
import { AckInbox } from './ack-inbox.js';
import { checkNatsSinkTables, type NatsSinkConfig, parseNatsSinkProperties, subjectOf } from './config.js';
import { natsFailure } from './nats-errors.js';
import { messageBytesBound, refuseOversized } from './payload-size.js';
import { type Outgoing, Publication } from './publication.js';
import { rowsOf } from './row-keys.js';
import { ensureStream } from './stream.js';

/** Snapshot rows read and published at a time; acks are awaited once, at the partition's end. */
const SNAPSHOT_CHUNK_ROWS = 1_000;
/**
 * Publications awaiting their ack at once, per batch or snapshot partition: enough to keep the
 * server busy on a loopback or a LAN, while bounding what the client's buffers hold.
 */
const MAX_IN_FLIGHT = 1_024;
/** How long a JetStream request (an ack, a stream lookup) may take before the batch fails. */
const REQUEST_TIMEOUT_MS = 20_000;
/** Changes of a batch made into messages at a time, each lot published while the next is made. */
const BATCH_LOT_CHANGES = 1_000;

/** A sink publishing each change as a JSON envelope to a JetStream stream (see docs/sinks/nats.md). */
export function createNatsSink(ctx: SinkContext<ConnectionOptions>): Sink {
  return new NatsSink(ctx, parseNatsSinkProperties(ctx.properties));
}

/**
 * Messages are published with JetStream and their acks awaited; only then is the checkpoint
 * stored, in the service's own store (`ctx.state`), which fences by epoch. Each message carries
 * its envelope id as `Nats-Msg-Id`, so a batch published again after a failure is dropped by the
 * stream within its duplicate window: at least once, consumers dropping a seen id beyond it.
 */
class NatsSink extends ServiceKeptSink {
  private connection: NatsConnection | undefined;
  private inbox: AckInbox | undefined;
  /** Numbering of each table's last transaction, carried from batch to batch. */
  private numbering: Numbering = new Map();
  private closed = false;

  constructor(
    private readonly ctx: SinkContext<ConnectionOptions>,
    private readonly config: NatsSinkConfig,
  ) {
    super(ctx.state);
  }

  async open(tables: TableSchema[]): Promise<void> {
    // The definition was checked when written; this guards a sink opened on an older one.
    checkNatsSinkTables(this.config, tables);
    // A connection lost since an earlier open is replaced: the client never reconnects by itself.
    if (!this.connection || this.connection.isClosed()) {
      this.inbox = undefined;
      const server = [this.ctx.connection.servers ?? []].flat()[0] ?? 'the server';
      try {
        this.connection = await connect(this.ctx.connection);
      } catch (error) {
        throw natsFailure(error, `cannot connect to NATS at ${server}`, false);
      }
    }
    const nc = this.connection;
    try {
      const jsm = await jetstreamManager(nc, { timeout: REQUEST_TIMEOUT_MS });
      await ensureStream(
        jsm,
        this.config,
        tables.map((t) => subjectOf(this.config, t)),
      );
      this.inbox ??= new AckInbox(nc, this.config.stream, REQUEST_TIMEOUT_MS);
    } catch (error) {
      throw natsFailure(error, 'cannot prepare the JetStream stream', nc.isClosed());
    }
    this.know(tables);
  }

  /**
   * Publishes the partition's rows as `read` messages as they are read, and marks it done once
   * every one is acknowledged. A partition copied again after a crash is published again under
   * the same ids (a read's id is its table and key). Each row is read once: no order to keep.
   */
  async writeSnapshotPartition(
    table: TableSchema,
    partition: SnapshotPartition,
    copyText: Readable,
  ): Promise<number> {
    const subject = subjectOf(this.config, table);
    const publication = this.publication();
    let rows = 0;
    for await (const chunk of copyTextRows(copyText, table.columns, SNAPSHOT_CHUNK_ROWS)) {
      await publication.send(
        chunk.map((row) => this.outgoing(table, subject, readEnvelope(table, row), NO_ROWS)),
      );
      rows += chunk.length;
    }
    await publication.settle();
    const { schema, table: name } = partition.table;
    await this.state.markPartitionDone({
      table: { schema, table: name },
      partitionId: partition.partitionId,
    });
    return rows;
  }

  async applyBatch(batch: ChangeBatch): Promise<void> {
    // Checked before anything is published, so that a worker fenced off publishes nothing more;
    // read while the first messages are made.
    const fenced = this.checkpointBefore(batch);
    fenced.catch(() => undefined);
    // A message too large for the server is refused before any of the batch is published: when a
    // change might make one, every message is made first; else a lot is made while the last goes.
    const { changes } = batch;
    const maxPayload = this.connection?.info?.max_payload;
    const lot =
      maxPayload !== undefined && changes.some((change) => messageBytesBound(change) > maxPayload)
        ? changes.length
        : BATCH_LOT_CHANGES;
    const subjects = new Map<TableRef, string>();
    const message = ({ table, envelope }: AddressedEnvelope): Outgoing => {
      let subject = subjects.get(table);
      if (subject === undefined) {
        subject = subjectOf(this.config, table);
        subjects.set(table, subject);
      }
      return this.outgoing(table, subject, envelope, rowsOf(this.schemaOf(table), envelope));
    };
    const publication = this.publication();
    let numbering = this.numbering;
    for (let from = 0; from < changes.length; from += lot) {
      const made = changeEnvelopes(changes.slice(from, from + lot), (ref) => this.schemaOf(ref), numbering);
      numbering = made.numbering;
      const messages = made.envelopes.map(message);
      if (from === 0) await fenced;
      await publication.send(messages);
    }
    await fenced;
    await publication.settle();
    await this.state.writeCheckpoint({ lsn: batch.commitLsn, epoch: batch.epoch });
    this.numbering = numbering;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.connection?.close().catch(() => undefined);
  }

  /** The message of an envelope, checked against the server's `max_payload`. */
  private outgoing(
    table: TableRef,
    subject: string,
    envelope: ChangeEnvelope,
    rows: readonly string[] | null,
  ): Outgoing {
    const payload = envelopeText(envelope);
    refuseOversized(table, envelope, payload, this.connection?.info?.max_payload);
    return { subject, payload, msgId: envelope.id, rows };
  }

  /** A new publication on the open connection, its failures said as the sink says them. */
  private publication(): Publication {
    const { connection: nc, inbox } = this;
    if (!nc || !inbox) throw new Error('the NATS sink is not open');
    return new Publication(inbox, this.config.stream, MAX_IN_FLIGHT, (error, subject) => {
      // No responders: nothing stores the subject any more (the stream was deleted or changed).
      if (error instanceof errors.NoRespondersError)
        return new Error(
          `no JetStream stream captures subject ${subject}: was stream ${this.config.stream} deleted?`,
          { cause: error },
        );
      return natsFailure(error, `publishing to NATS subject ${subject} failed`, nc.isClosed());
    });
  }
}

/** A message of a snapshot row: about no other, so nothing to wait for. */
const NO_ROWS: readonly string[] = [];
