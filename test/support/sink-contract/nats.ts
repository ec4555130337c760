import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { NO_LOCAL_ACCESS } from '../../../src/connections/local-access.js';
import type { TableSchema } from '../../../src/core/change.js';
import type { ChangeEnvelope } from '../../../src/sinks/change-envelope.js';
import { natsConnectionType } from '../../../src/sinks/nats/nats-connection-type.js';
import { createNatsSink } from '../../../src/sinks/nats/nats-sink.js';
import type { ContractKind } from './contract-kind.js';
import { foldEnvelopes } from './normalised-rows.js';
import { serviceState } from './service-state.js';

/** The NATS JetStream sink on the local server: a stream and subjects per pipeline, its bookkeeping in the service's store. */
export const natsContract: ContractKind = {
  name: 'nats',
  cannot: {
    emptiesTargetOnReset: "a stream's messages belong to its consumers",
    reshapesWrittenRows: 'a message keeps the shape it was sent in',
    comparison: 'a stream cannot be read back as tables',
  },
  async start() {
    const nc = await connect({ servers: '127.0.0.1:4222' });
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const store = await serviceState();
    const settings = await natsConnectionType.settings('nats://127.0.0.1:4222', { tls: {} }, NO_LOCAL_ACCESS);
    const streams: string[] = [];
    return {
      async pipeline() {
        const { pipelineId, state } = await store.pipeline();
        const tag = randomUUID().replaceAll('-', '').slice(0, 10);
        const stream = `CONTRACT_${tag}`;
        const prefix = `contract${tag}`;
        streams.push(stream);
        /** Every message stored on a table's subject, in stream order. */
        const read = async (table: TableSchema): Promise<ChangeEnvelope[]> => {
          const subject = `${prefix}.${table.schema}.${table.table}`;
          const info = await jsm.streams.info(stream, { subjects_filter: subject }).catch(() => undefined);
          const count = info?.state.subjects?.[subject] ?? 0;
          const out: ChangeEnvelope[] = [];
          if (count === 0) return out;
          const consumer = await js.consumers.get(stream, { filter_subjects: subject });
          while (out.length < count) {
            const messages = await consumer.fetch({ max_messages: count - out.length, expires: 5_000 });
            for await (const m of messages) out.push(m.json<ChangeEnvelope>());
          }
          return out;
        };
        return {
          async open(tables) {
            const sink = createNatsSink({
              pipelineId,
              connection: settings,
              properties: { subject: `${prefix}.{schema}.{table}`, stream },
              state,
            });
            await sink.open(tables);
            return sink;
          },
          rows: async (table) => foldEnvelopes(table, await read(table)),
          messageIds: async (table) => (await read(table)).map((e) => e.id),
        };
      },
      async stop() {
        for (const stream of streams) await jsm.streams.delete(stream).catch(() => undefined);
        await nc.close();
        await store.release();
      },
    };
  },
};
