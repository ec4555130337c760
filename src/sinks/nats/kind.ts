import type { ConnectionOptions } from '@nats-io/transport-node';
import type { SinkKind } from '../../core/sink.js';
import { lazySink } from '../lazy-sink.js';
import {
  checkNatsSinkTables,
  NATS_SINK_PROPERTIES,
  type NatsSinkConfig,
  parseNatsSinkProperties,
} from './config.js';

/** The NATS sink: each change a JSON envelope published to a JetStream stream, acked before the checkpoint. */
export const natsSinkKind: SinkKind<NatsSinkConfig, ConnectionOptions> = {
  type: 'nats',
  properties: NATS_SINK_PROPERTIES,
  parseProperties: parseNatsSinkProperties,
  // Its client library is loaded with the first sink of the kind.
  create: (ctx) => lazySink(async () => (await import('./nats-sink.js')).createNatsSink(ctx)),
  checkTables: (props, tables) => checkNatsSinkTables(parseNatsSinkProperties(props), tables),
  preflight: async (...args) => (await import('./preflight.js')).preflightNatsSink(...args),
};
