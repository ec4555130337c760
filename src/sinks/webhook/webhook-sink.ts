import type { Readable } from 'node:stream';
import type { TableSchema } from '../../core/change.js';
import { copyTextRows } from '../../core/copy-text.js';
import type { ChangeBatch, Sink, SinkContext, SnapshotPartition } from '../../core/sink.js';
import { changeEnvelopes, envelopeText, type Numbering, readEnvelope } from '../change-envelope.js';
import { ServiceKeptSink } from '../envelope-sink.js';
import { InFlight } from '../in-flight.js';
import { parseWebhookSinkProperties, type WebhookSinkConfig } from './config.js';
import { detailOf, postedBefore, unfinishedAt, unfinishedOf } from './delivered.js';
import { RequestChunks, type WebhookRequest } from './request-chunks.js';
import { WebhookClient } from './webhook-client.js';
import type { WebhookSettings } from './webhook-connection-type.js';

/** Requests of a snapshot partition posted before the first is answered: the receiver is kept busy. */
const SNAPSHOT_REQUESTS_IN_FLIGHT = 4;

/** A sink posting batches of change envelopes to an HTTPS endpoint (see docs/sinks/webhook.md). */
export function createWebhookSink(ctx: SinkContext<WebhookSettings>): Sink {
  const config = parseWebhookSinkProperties(ctx.properties);
  const client = new WebhookClient(ctx.connection, {
    timeoutMs: config.timeoutMs,
    maxAttempts: config.maxAttempts,
    pipelineId: ctx.pipelineId,
  });
  return new WebhookSink(ctx, config, client);
}

/**
 * The receiver has no storage the sink can use, so its bookkeeping is the service's (`ctx.state`):
 * the checkpoint is written only after the receiver answered 2xx to every request of the batch,
 * fenced by epoch there; a snapshot partition is marked done once all its rows were accepted. At
 * least once: a request the receiver accepted but whose answer was lost, or whose checkpoint was
 * not written (a crash), is posted again, with the same event ids.
 */
class WebhookSink extends ServiceKeptSink {
  /** Numbering of each table's last transaction, carried from batch to batch. */
  private numbering: Numbering = new Map();
  private closed = false;

  constructor(
    readonly ctx: SinkContext<WebhookSettings>,
    private readonly config: WebhookSinkConfig,
    private readonly client: WebhookClient,
  ) {
    super(ctx.state);
  }

  /** Nothing to connect to ahead of a request: the first batch tells whether the receiver is there. */
  async open(tables: TableSchema[]): Promise<void> {
    this.know(tables);
  }

  /**
   * Posts the partition's rows as `read` events, in requests of at most `batch_max_events` events
   * and about `batch_max_bytes`, several in flight (the rows of a copy come in no particular order),
   * then marks the partition done once every one was accepted. A partition interrupted midway is
   * copied again whole: its rows come again under the same ids (a read's id is its table and key).
   */
  async writeSnapshotPartition(
    table: TableSchema,
    partition: SnapshotPartition,
    copyText: Readable,
  ): Promise<number> {
    const { maxEvents, maxBytes } = this.config.batch;
    const chunks = new RequestChunks(maxEvents, maxBytes);
    const requests = new InFlight(SNAPSHOT_REQUESTS_IN_FLIGHT);
    let rows = 0;
    for await (const chunk of copyTextRows(copyText, table.columns, Math.min(maxEvents, 1000))) {
      for (const row of chunk) {
        const envelope = readEnvelope(table, row);
        const ready = chunks.add(envelopeText(envelope), envelope.id);
        if (ready) await requests.add(() => this.post(ready));
      }
      rows += chunk.length;
    }
    const last = chunks.take();
    if (last) await requests.add(() => this.post(last));
    await requests.settle();
    await this.state.markPartitionDone(partition);
    return rows;
  }

  /**
   * Posts the batch's events, in as many requests as the limits take, and once the receiver
   * answered 2xx to all, stores the checkpoint. Between requests, what was posted is noted with
   * the checkpoint before the batch, so a batch failing midway is not posted again from its start.
   * A writer fenced off by a newer epoch is stopped before it posts, when the store already says
   * so; the store refuses its checkpoint in any case.
   */
  async applyBatch(batch: ChangeBatch): Promise<void> {
    const stored = await this.checkpointBefore(batch);
    const before = unfinishedOf(stored?.detail);
    const { envelopes, numbering } = changeEnvelopes(
      batch.changes,
      (ref) => this.schemaOf(ref),
      this.numbering,
    );
    const fresh = envelopes.filter((e) => !postedBefore(e, before));
    const { maxEvents, maxBytes } = this.config.batch;
    const chunks = new RequestChunks(maxEvents, maxBytes);
    let posted = 0;
    const post = async (request: WebhookRequest) => {
      await this.post(request);
      posted += request.events;
      // With no checkpoint yet there is none to note it with: a failure then posts it all again.
      if (posted < fresh.length && stored) {
        const note = unfinishedAt(stored.lsn, before, fresh.slice(0, posted));
        await this.state.writeCheckpoint({ lsn: stored.lsn, epoch: batch.epoch }, detailOf(note));
      }
    };
    // The next request's body is made while the one before is in flight; the requests are still
    // posted one at a time, in order, none after one that failed.
    let inFlight: Promise<void> | undefined;
    const send = async (request: WebhookRequest) => {
      await inFlight;
      inFlight = post(request);
      // Awaited before the next request or the checkpoint: a failure meanwhile is not unhandled.
      inFlight.catch(() => undefined);
    };
    for (const e of fresh) {
      const ready = chunks.add(envelopeText(e.envelope), e.envelope.id);
      if (ready) await send(ready);
    }
    const last = chunks.take();
    if (last) await send(last);
    await inFlight;

    const unfinished = unfinishedAt(batch.commitLsn, before, fresh);
    await this.state.writeCheckpoint({ lsn: batch.commitLsn, epoch: batch.epoch }, detailOf(unfinished));
    this.numbering = numbering;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.close();
  }

  private post(request: WebhookRequest): Promise<void> {
    return this.client.post(request.body, request.key);
  }
}
