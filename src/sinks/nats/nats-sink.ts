import type { Readable } from 'node:stream';
import { type JetStreamClient, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type ConnectionOptions, connect, type NatsConnection, RequestError } from '@nats-io/transport-node';
import type { TableRef, TableSchema } from '../../core/change.js';
import { copyTextRows } from '../../core/copy-text.js';
import type { ChangeBatch, Sink, SinkContext, SnapshotPartition } from '../../core/sink.js';
import {
  type ChangeEnvelope,
  changeEnvelopes,
  type EnvelopeValue,
  envelopeText,
  type Numbering,
  readEnvelope,
} from '../change-envelope.js';
import { ServiceKeptSink } from '../envelope-sink.js';
import { RefusedChangeError } from '../refused-change.js';
import { checkNatsSinkTables, type NatsSinkConfig, parseNatsSinkProperties, subjectOf } from './config.js';
import { natsFailure } from './nats-errors.js';
import { ensureStream } from './stream.js';

/** Snapshot rows read and published at a time: each chunk's acks are awaited before the next. */
const SNAPSHOT_CHUNK_ROWS = 1_000;
/** Publications awaiting their ack at once: bounds what a batch keeps in the client's buffers. */
const MAX_IN_FLIGHT = 256;
/** How long a JetStream request (an ack, a stream lookup) may take before the batch fails. */
const REQUEST_TIMEOUT_MS = 20_000;
/** Room for the `Nats-Msg-Id` header and the protocol line, next to a message's JSON. */
const HEADER_ALLOWANCE = 512;

/** One message to publish: the envelope's JSON on its table's subject, its id for deduplication. */
interface Outgoing {
  table: TableRef;
  subject: string;
  envelope: ChangeEnvelope;
}

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
  private js: JetStreamClient | undefined;
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
      this.js = undefined;
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
      this.js ??= jetstream(nc, { timeout: REQUEST_TIMEOUT_MS });
    } catch (error) {
      throw natsFailure(error, 'cannot prepare the JetStream stream', nc.isClosed());
    }
    this.know(tables);
  }

  /**
   * Publishes the partition's rows as `read` messages, chunk by chunk, and marks it done once
   * every one is acknowledged. A partition copied again after a crash is published again under
   * the same ids (a read's id is its table and key).
   */
  async writeSnapshotPartition(
    table: TableSchema,
    partition: SnapshotPartition,
    copyText: Readable,
  ): Promise<number> {
    const subject = subjectOf(this.config, table);
    let rows = 0;
    for await (const chunk of copyTextRows(copyText, table.columns, SNAPSHOT_CHUNK_ROWS)) {
      await this.publishAll(chunk.map((row) => ({ table, subject, envelope: readEnvelope(table, row) })));
      rows += chunk.length;
    }
    const { schema, table: name } = partition.table;
    await this.state.markPartitionDone({
      table: { schema, table: name },
      partitionId: partition.partitionId,
    });
    return rows;
  }

  async applyBatch(batch: ChangeBatch): Promise<void> {
    // Checked first too, so that a worker fenced off publishes nothing more.
    await this.checkpointBefore(batch);
    const { envelopes, numbering } = changeEnvelopes(
      batch.changes,
      (ref) => this.schemaOf(ref),
      this.numbering,
    );
    await this.publishAll(
      envelopes.map(({ table, envelope }) => ({ table, subject: subjectOf(this.config, table), envelope })),
    );
    await this.state.writeCheckpoint({ lsn: batch.commitLsn, epoch: batch.epoch });
    this.numbering = numbering;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.connection?.close().catch(() => undefined);
  }

  /**
   * Publishes every message, at most MAX_IN_FLIGHT awaiting their acks at once, and resolves once
   * all are acknowledged by the stream. The first failure stops further publishing; the ones under
   * way are awaited, and the batch fails with it.
   */
  private async publishAll(messages: readonly Outgoing[]): Promise<void> {
    const { connection: nc, js } = this;
    if (!nc || !js) throw new Error('the NATS sink is not open');
    const payloads = messages.map((m) => envelopeText(m.envelope));
    refuseOversized(messages, payloads, nc.info?.max_payload);
    let failure: { error: unknown; subject: string } | undefined;
    let next = 0;
    const worker = async () => {
      while (failure === undefined && next < messages.length) {
        const i = next++;
        const { subject, envelope } = messages[i] as Outgoing;
        try {
          const ack = await js.publish(subject, payloads[i], { msgID: envelope.id });
          if (ack.stream !== this.config.stream) {
            throw new Error(
              `subject ${subject} is stored in stream ${ack.stream}, not in stream ${this.config.stream}`,
            );
          }
        } catch (error) {
          failure ??= { error, subject };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(MAX_IN_FLIGHT, messages.length) }, worker));
    if (failure === undefined) return;
    const { error, subject } = failure;
    // No responders: nothing stores the subject any more (the stream was deleted or changed).
    if (error instanceof Error && error.cause instanceof RequestError && error.cause.isNoResponders()) {
      throw new Error(
        `no JetStream stream captures subject ${subject}: was stream ${this.config.stream} deleted?`,
        {
          cause: error,
        },
      );
    }
    throw natsFailure(error, `publishing to NATS subject ${subject} failed`, nc.isClosed());
  }
}

/**
 * Refuses, before anything of the batch is published, a message larger than the server takes
 * (its `max_payload`): publishing it again could never succeed.
 */
function refuseOversized(
  messages: readonly Outgoing[],
  payloads: readonly string[],
  maxPayload?: number,
): void {
  if (!maxPayload) return;
  messages.forEach(({ table, envelope }, i) => {
    const bytes = Buffer.byteLength(payloads[i] as string) + envelope.id.length + HEADER_ALLOWANCE;
    if (bytes <= maxPayload) return;
    throw new RefusedChangeError(
      table,
      envelope.key ? keyText(envelope.key) : undefined,
      `its message is about ${bytes} bytes, more than the NATS server's max_payload of ${maxPayload}`,
    );
  });
}

const keyText = (key: Record<string, EnvelopeValue>): Record<string, string | null> =>
  Object.fromEntries(
    Object.entries(key).map(([name, value]) => [
      name,
      value === null ? null : typeof value === 'string' ? value : envelopeText(value),
    ]),
  );
