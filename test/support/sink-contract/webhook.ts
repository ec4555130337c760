import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NO_LOCAL_ACCESS } from '../../../src/connections/local-access.js';
import type { TableSchema } from '../../../src/core/change.js';
import type { ChangeEnvelope } from '../../../src/sinks/change-envelope.js';
import { webhookConnectionType } from '../../../src/sinks/webhook/webhook-connection-type.js';
import { createWebhookSink } from '../../../src/sinks/webhook/webhook-sink.js';
import type { ContractKind } from './contract-kind.js';
import { envelopeTable, foldEnvelopes } from './normalised-rows.js';
import { serviceState } from './service-state.js';

const PRIVATE = { ...NO_LOCAL_ACCESS, webhookAllowPrivate: true };

/** The webhook sink posting to a local receiver that keeps every event by pipeline, its bookkeeping in the service's store. */
export const webhookContract: ContractKind = {
  name: 'webhook',
  cannot: {
    emptiesTargetOnReset: 'what the receiver was sent is its own',
    reshapesWrittenRows: 'an event keeps the shape it was sent in',
    comparison: 'a receiver cannot be read back',
  },
  async start() {
    const received = new Map<string, ChangeEnvelope[]>();
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const pipeline = String(req.headers['x-replicator-pipeline']);
        const { events } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { events: ChangeEnvelope[] };
        received.set(pipeline, [...(received.get(pipeline) ?? []), ...events]);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const dsn = webhookConnectionType.checkDsn(`http://127.0.0.1:${port}/hook`, PRIVATE);
    const settings = await webhookConnectionType.settings(
      dsn.publicDsn,
      { password: 'secret', tls: {} },
      PRIVATE,
    );
    const store = await serviceState();
    return {
      async pipeline() {
        const { pipelineId, state } = await store.pipeline();
        const read = (table: TableSchema) =>
          (received.get(pipelineId) ?? []).filter((e) => e.table === envelopeTable(table));
        return {
          async open(tables) {
            const sink = createWebhookSink({ pipelineId, connection: settings, properties: {}, state });
            await sink.open(tables);
            return sink;
          },
          rows: async (table) => foldEnvelopes(table, read(table)),
          messageIds: async (table) => read(table).map((e) => e.id),
        };
      },
      async stop() {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        await store.release();
      },
    };
  },
};
