import type { TableRef } from '../../core/change.js';
import type { PropertyDoc } from '../../core/property-docs.js';
import { validationFailed } from '../../errors/app-error.js';
import { checkNameTemplate, fillNameTemplate } from '../name-template.js';
import {
  batchLimitsOf,
  batchPropertyDocs,
  booleanProperty,
  refuseUnknownProperties,
} from '../property-values.js';
import type { BatchLimits, SinkProperties } from '../registry.js';

export const EXCHANGE_TYPES = ['topic', 'direct', 'fanout', 'headers'] as const;
export type ExchangeType = (typeof EXCHANGE_TYPES)[number];

/** The RabbitMQ sink's properties, parsed and validated. */
export interface RabbitmqSinkConfig extends SinkProperties {
  /** Exchange name template, `{schema}` and `{table}` its placeholders. */
  exchange: string;
  /** Type the sink declares a missing exchange with. */
  exchangeType: ExchangeType;
  /** Routing key template, `{schema}` and `{table}` its placeholders. */
  routingKey: string;
  /** Whether a message no queue takes fails its batch (AMQP `mandatory`) rather than being dropped. */
  mandatory: boolean;
  batch: BatchLimits;
}

/** Every property of the RabbitMQ sink, for error messages and docs/sinks/rabbitmq.md. */
export const RABBITMQ_SINK_PROPERTIES: readonly PropertyDoc[] = [
  {
    key: 'exchange',
    default: '`replicator`',
    description:
      "Exchange each table's messages are published to; `{schema}` and `{table}` are replaced by the source table's names. Declared durable, of `exchange_type`, when missing; an existing one is used if it has that type.",
  },
  {
    key: 'exchange_type',
    default: '`topic`',
    description: 'Type of the exchange: `topic`, `direct`, `fanout` or `headers`.',
  },
  {
    key: 'routing_key',
    default: '`{schema}.{table}`',
    description:
      "Routing key of each table's messages; `{schema}` and `{table}` are replaced by the source table's names. Queues bound with it (or a pattern, on a topic exchange) receive them.",
  },
  {
    key: 'mandatory',
    default: 'true',
    description:
      'Whether a message no queue is bound for fails its batch (which is retried) rather than being dropped by the broker: `true` or `false`.',
  },
  ...batchPropertyDocs('published with one checkpoint', 'published'),
];

const DEFAULT_EXCHANGE = 'replicator';
const DEFAULT_ROUTING_KEY = '{schema}.{table}';
/** AMQP short strings, which exchange names and routing keys are, hold at most 255 bytes. */
export const AMQP_NAME_MAX_BYTES = 255;

function nameTemplate(key: string, text: string | undefined, fallback: string): string {
  if (text === undefined) return fallback;
  const field = `sink.properties.${key}`;
  if (key === 'exchange' && text === '') {
    throw validationFailed(field, "must not be empty: the default exchange ('') is not supported");
  }
  if (Buffer.byteLength(text) > AMQP_NAME_MAX_BYTES) {
    throw validationFailed(field, `must be at most ${AMQP_NAME_MAX_BYTES} bytes`);
  }
  // A fanout or headers exchange routes without a key: an empty one is a name as good as any.
  checkNameTemplate(key, text, { blank: key === 'routing_key' });
  return text;
}

function exchangeTypeOf(text: string | undefined): ExchangeType {
  if (text === undefined) return 'topic';
  if ((EXCHANGE_TYPES as readonly string[]).includes(text)) return text as ExchangeType;
  throw validationFailed('sink.properties.exchange_type', `must be one of ${EXCHANGE_TYPES.join(', ')}`);
}

/** Parses and validates the RabbitMQ sink properties; throws a 422 AppError naming the bad key. */
export function parseRabbitmqSinkProperties(props: Record<string, string>): RabbitmqSinkConfig {
  refuseUnknownProperties(props, RABBITMQ_SINK_PROPERTIES);
  return {
    exchange: nameTemplate('exchange', props.exchange, DEFAULT_EXCHANGE),
    exchangeType: exchangeTypeOf(props.exchange_type),
    routingKey: nameTemplate('routing_key', props.routing_key, DEFAULT_ROUTING_KEY),
    mandatory: booleanProperty('mandatory', props.mandatory, true),
    batch: batchLimitsOf(props),
  };
}

/** Where a table's messages go: its exchange and routing key. */
export function routeOf(
  config: RabbitmqSinkConfig,
  table: TableRef,
): { exchange: string; routingKey: string } {
  return {
    exchange: fillNameTemplate(config.exchange, table),
    routingKey: fillNameTemplate(config.routingKey, table),
  };
}

/** Refuses (422) templates that give a table an exchange or routing key longer than AMQP allows. */
export function checkRabbitmqTables(props: Record<string, string>, tables: readonly TableRef[]): void {
  const config = parseRabbitmqSinkProperties(props);
  for (const table of tables) {
    const route = routeOf(config, table);
    for (const [key, name] of [
      ['exchange', route.exchange],
      ['routing_key', route.routingKey],
    ] as const) {
      if (Buffer.byteLength(name) > AMQP_NAME_MAX_BYTES) {
        throw validationFailed(
          `sink.properties.${key}`,
          `is longer than ${AMQP_NAME_MAX_BYTES} bytes for table ${table.schema}.${table.table}`,
        );
      }
    }
  }
}
