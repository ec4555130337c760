import { rabbitmqReference } from './references/rabbitmq-reference.js';
import type { ReferenceRegistry } from './sink-reference.js';

/** Each sink kind's reference (see SinkReference): one module of bench/references/ each. */
export const SINK_REFERENCES: ReferenceRegistry = {
  rabbitmq: rabbitmqReference,
};
