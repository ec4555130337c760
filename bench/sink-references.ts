import { duckdbReference } from './references/duckdb-reference.js';
import { mysqlReference } from './references/mysql-reference.js';
import { natsReference } from './references/nats-reference.js';
import { rabbitmqReference } from './references/rabbitmq-reference.js';
import { redisReference } from './references/redis-reference.js';
import { webhookReference } from './references/webhook-reference.js';
import type { ReferenceRegistry } from './sink-reference.js';

/** Each sink kind's reference (see SinkReference): one module of bench/references/ each. */
export const SINK_REFERENCES: ReferenceRegistry = {
  mysql: mysqlReference,
  duckdb: duckdbReference,
  redis: redisReference,
  nats: natsReference,
  rabbitmq: rabbitmqReference,
  webhook: webhookReference,
};
