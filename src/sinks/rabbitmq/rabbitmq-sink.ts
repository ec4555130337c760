import type { Readable } from 'node:stream';
import type { TableRef, TableSchema } from '../../core/change.js';
import { copyTextRows } from '../../core/copy-text.js';
import type { ChangeBatch, Sink, SinkContext, SnapshotPartition } from '../../core/sink.js';
import { type AddressedEnvelope, changeEnvelopes, type Numbering, readEnvelope } from '../change-envelope.js';
import { ServiceKeptSink } from '../envelope-sink.js';
import { tableRefKey } from '../table-ref-key.js';
import { detailOf, publishedBefore, unfinishedAt, unfinishedOf } from '../unfinished-transactions.js';
import { Broker } from './broker.js';
import { parseRabbitmqSinkProperties, type RabbitmqSinkConfig, routeOf } from './config.js';
import { Flight, type Outgoing } from './confirms.js';
import { MessageBuilder } from './message.js';
import type { RabbitmqSettings } from './rabbitmq-connection-type.js';

/** Snapshot rows read from the COPY stream at a time. */
const SNAPSHOT_CHUNK_ROWS = 500;
/**
 * A batch's changes made into messages at a time: the broker takes the first ones while the rest
 * are being made, rather than waiting for the whole batch's envelopes.
 */
const BATCH_CHUNK_CHANGES = 500;

/** A sink publishing each change as a JSON envelope to RabbitMQ exchanges (see docs/sinks/rabbitmq.md). */
export function createRabbitmqSink(ctx: SinkContext<RabbitmqSettings>): Sink {
  return new RabbitmqSink(ctx, parseRabbitmqSinkProperties(ctx.properties));
}

/**
 * The broker keeps no bookkeeping of ours: the checkpoint (with the transaction published in part,
 * if any) and the done partitions are the service's (`ctx.state`), written only once the broker
 * has confirmed every message they cover. Delivery is at least once: a crash between the confirms
 * and the checkpoint publishes the batch (or partition) again, under the same message ids.
 */
class RabbitmqSink extends ServiceKeptSink {
  private broker: Broker | undefined;
  /** Each exchange's declaration, made once per connection. */
  private readonly exchanges = new Map<string, Promise<void>>();
  /** Numbering of each table's last transaction, carried from batch to batch. */
  private numbering: Numbering = new Map();
  private closed = false;
  private readonly messages: MessageBuilder;

  constructor(
    private readonly ctx: SinkContext<RabbitmqSettings>,
    private readonly config: RabbitmqSinkConfig,
  ) {
    super(ctx.state);
    this.messages = new MessageBuilder(config);
  }

  async open(tables: TableSchema[]): Promise<void> {
    if (this.closed) throw new Error('the RabbitMQ sink is closed');
    this.broker ??= await Broker.connect(this.ctx.connection);
    this.know(tables);
    // A missing exchange, or one of another type, shows at once rather than at the first change.
    await Promise.all(tables.map((table) => this.exchangeReady(table)));
  }

  /**
   * Publishes the partition's rows as `read` messages and marks it done once the broker confirmed
   * them all. A partition that fails part way is published again whole, under the same ids (a
   * read's id is its table and key).
   */
  async writeSnapshotPartition(
    table: TableSchema,
    partition: SnapshotPartition,
    copyText: Readable,
  ): Promise<number> {
    await this.exchangeReady(table);
    const rows = await this.publish(async (send) => {
      let count = 0;
      for await (const chunk of copyTextRows(copyText, table.columns, SNAPSHOT_CHUNK_ROWS)) {
        const now = Date.now();
        for (const row of chunk) {
          const waiting = send(this.messages.messageOf(table, readEnvelope(table, row), now));
          if (waiting) await waiting;
        }
        count += chunk.length;
      }
      return count;
    });
    await this.state.markPartitionDone(partition);
    return rows;
  }

  /**
   * Publishes the batch, waits for every confirm, then stores the checkpoint. The stored epoch is
   * checked first, so that a worker that lost the pipeline publishes nothing (the checkpoint
   * write fences again, for a takeover in between). The messages go out in commit order on one
   * channel, with up to MAX_UNCONFIRMED of them awaiting their confirm; a failure of any (a nack,
   * a return) fails the whole batch, which is published again from its start.
   */
  async applyBatch(batch: ChangeBatch): Promise<void> {
    this.connected();
    const stored = await this.checkpointBefore(batch);
    const before = unfinishedOf(stored?.detail);
    let numbering = this.numbering;
    if (batch.changes.length > 0) {
      await this.publish(async (send) => {
        for (let from = 0; from < batch.changes.length; from += BATCH_CHUNK_CHANGES) {
          // Numbered chunk by chunk, carried on: the same ids as the batch numbered whole.
          const made = changeEnvelopes(
            batch.changes.slice(from, from + BATCH_CHUNK_CHANGES),
            (ref) => this.schemaOf(ref),
            numbering,
          );
          numbering = made.numbering;
          const fresh = made.envelopes.filter((e) => !publishedBefore(e, before));
          await this.exchangesReady(fresh);
          const now = Date.now();
          for (const { table, envelope } of fresh) {
            // Awaited only when the channel has no room: a promise per message costs the batch.
            const waiting = send(this.messages.messageOf(table, envelope, now));
            if (waiting) await waiting;
          }
        }
      });
    }
    const unfinished = unfinishedAt(batch.commitLsn, before, numbering);
    await this.state.writeCheckpoint({ lsn: batch.commitLsn, epoch: batch.epoch }, detailOf(unfinished));
    this.numbering = numbering;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.broker?.close();
  }

  /** Runs `produce` on a confirm channel of its own, and waits for the confirm of all it sent. */
  private async publish<T>(
    produce: (send: (message: Outgoing) => Promise<void> | undefined) => Promise<T>,
  ): Promise<T> {
    const broker = this.connected();
    try {
      return await broker.withChannel(async (channel) => {
        const flight = new Flight(broker, channel);
        try {
          const result = await produce((message) => flight.publish(message));
          await flight.settled();
          return result;
        } finally {
          flight.end();
        }
      });
    } catch (error) {
      // An exchange deleted meanwhile closes the channel: the next publish declares them again.
      this.exchanges.clear();
      throw error;
    }
  }

  /** The exchanges of the envelopes' tables, declared (each table's, once). */
  private async exchangesReady(envelopes: readonly AddressedEnvelope[]): Promise<void> {
    const tables = new Map(envelopes.map(({ table }) => [tableRefKey(table), table]));
    await Promise.all([...tables.values()].map((table) => this.exchangeReady(table)));
  }

  /** Declares the exchange of a table's messages, once. */
  private exchangeReady(table: TableRef): Promise<void> {
    const broker = this.connected();
    const { exchange } = routeOf(this.config, table);
    let declared = this.exchanges.get(exchange);
    if (!declared) {
      declared = broker.declareExchange(exchange, this.config.exchangeType);
      // A failed declaration is made again next time (the operator may have fixed it meanwhile).
      declared.catch(() => this.exchanges.delete(exchange));
      this.exchanges.set(exchange, declared);
    }
    return declared;
  }

  private connected(): Broker {
    if (!this.broker || this.closed) throw new Error('the RabbitMQ sink is not open');
    this.broker.throwIfLost();
    return this.broker;
  }
}
