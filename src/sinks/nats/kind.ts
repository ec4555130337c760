import type { ConnectionOptions } from '@nats-io/transport-node';
import type { SinkKind } from '../../core/sink.js';
import {
  checkNatsSinkTables,
  NATS_SINK_PROPERTIES,
  type NatsSinkConfig,
  parseNatsSinkProperties,
} from './config.js';
import { createNatsSink } from './nats-sink.js';
import { preflightNatsSink } from './preflight.js';

/** The NATS sink: each change a JSON envelope published to a JetStream stream, acked before the checkpoint. */
export const natsSinkKind: SinkKind<NatsSinkConfig, ConnectionOptions> = {
  type: 'nats',
  properties: NATS_SINK_PROPERTIES,
  parseProperties: parseNatsSinkProperties,
  create: createNatsSink,
  checkTables: (props, tables) => checkNatsSinkTables(parseNatsSinkProperties(props), tables),
  preflight: preflightNatsSink,
};
