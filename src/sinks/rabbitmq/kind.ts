import type { SinkKind } from '../../core/sink.js';
import { lazySink } from '../lazy-sink.js';
import {
  checkRabbitmqTables,
  parseRabbitmqSinkProperties,
  RABBITMQ_SINK_PROPERTIES,
  type RabbitmqSinkConfig,
} from './config.js';
import type { RabbitmqSettings } from './rabbitmq-connection-type.js';

/** The RabbitMQ sink: each change a persistent JSON message, confirmed before its checkpoint is stored. */
export const rabbitmqSinkKind: SinkKind<RabbitmqSinkConfig, RabbitmqSettings> = {
  type: 'rabbitmq',
  properties: RABBITMQ_SINK_PROPERTIES,
  parseProperties: parseRabbitmqSinkProperties,
  // Its client library is loaded with the first sink of the kind.
  create: (ctx) => lazySink(async () => (await import('./rabbitmq-sink.js')).createRabbitmqSink(ctx)),
  checkTables: checkRabbitmqTables,
};
