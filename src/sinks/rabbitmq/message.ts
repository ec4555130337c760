import type { TableRef } from '../../core/change.js';
import { type ChangeEnvelope, type EnvelopeOp, envelopeText } from '../change-envelope.js';
import { type RabbitmqSinkConfig, routeOf } from './config.js';
import type { Outgoing } from './confirms.js';

/** A table's exchange, routing key and headers (one object per op), shared by all its messages. */
interface TableRoute {
  exchange: string;
  routingKey: string;
  headers: Partial<Record<EnvelopeOp, Readonly<Record<string, string>>>>;
}

/**
 * The AMQP message of each envelope: its JSON as the body, persistent (delivery mode 2, so a
 * durable queue keeps it across a broker restart), the envelope id as `message_id` for consumers
 * to drop a redelivery, the op as `type`, and the table in the headers for a headers exchange to
 * route on. `timestamp` is the commit time in seconds (AMQP's unit), or the publish time for a
 * snapshot row. Each table's route is worked out once, and each transaction's time parsed once:
 * this runs for every message.
 */
export class MessageBuilder {
  // By the ref's identity: every change of a table shares the source's ref.
  private readonly routes = new WeakMap<TableRef, TableRoute>();
  private commitText: string | null = null;
  private commitMs = Number.NaN;

  constructor(private readonly config: RabbitmqSinkConfig) {}

  messageOf(table: TableRef, envelope: ChangeEnvelope, now: number): Outgoing {
    const route = this.routeOf(table);
    const op = envelope.op;
    let headers = route.headers[op];
    if (!headers) {
      headers = Object.freeze({ schema: table.schema, table: table.table, op });
      route.headers[op] = headers;
    }
    return {
      exchange: route.exchange,
      routingKey: route.routingKey,
      content: Buffer.from(envelopeText(envelope)),
      options: {
        persistent: true,
        mandatory: this.config.mandatory,
        contentType: 'application/json',
        messageId: envelope.id,
        timestamp: Math.floor(this.committedMs(envelope.commit_time, now) / 1000),
        type: op,
        appId: 'replicator',
        headers,
      },
    };
  }

  private routeOf(table: TableRef): TableRoute {
    let route = this.routes.get(table);
    if (!route) {
      route = { ...routeOf(this.config, table), headers: {} };
      this.routes.set(table, route);
    }
    return route;
  }

  /** The commit time in milliseconds, or `now` for a snapshot row (or a time that does not parse). */
  private committedMs(text: string | null, now: number): number {
    if (text === null) return now;
    if (text !== this.commitText) {
      this.commitText = text;
      this.commitMs = Date.parse(text);
    }
    return Number.isNaN(this.commitMs) ? now : this.commitMs;
  }
}
