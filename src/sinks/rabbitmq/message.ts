import type { TableRef } from '../../core/change.js';
import { type ChangeEnvelope, envelopeText } from '../change-envelope.js';
import { type RabbitmqSinkConfig, routeOf } from './config.js';
import type { Outgoing } from './confirms.js';

/**
 * The AMQP message of one envelope: its JSON as the body, persistent (delivery mode 2, so a durable
 * queue keeps it across a broker restart), the envelope id as `message_id` for consumers to drop a
 * redelivery, the op as `type`, and the table in the headers for a headers exchange to route on.
 * `timestamp` is the commit time in seconds (AMQP's unit), or the publish time for a snapshot row.
 */
export function messageOf(
  config: RabbitmqSinkConfig,
  table: TableRef,
  envelope: ChangeEnvelope,
  now: number,
): Outgoing {
  const { exchange, routingKey } = routeOf(config, table);
  const committed = envelope.commit_time === null ? Number.NaN : Date.parse(envelope.commit_time);
  return {
    exchange,
    routingKey,
    content: Buffer.from(envelopeText(envelope)),
    options: {
      persistent: true,
      mandatory: config.mandatory,
      contentType: 'application/json',
      messageId: envelope.id,
      timestamp: Math.floor((Number.isNaN(committed) ? now : committed) / 1000),
      type: envelope.op,
      appId: 'replicator',
      headers: { schema: table.schema, table: table.table, op: envelope.op },
    },
  };
}
