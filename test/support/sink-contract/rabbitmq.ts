import { randomUUID } from 'node:crypto';
import amqp from 'amqplib';
import { NO_LOCAL_ACCESS } from '../../../src/connections/local-access.js';
import type { TableSchema } from '../../../src/core/change.js';
import type { ChangeEnvelope } from '../../../src/sinks/change-envelope.js';
import { rabbitmqConnectionType } from '../../../src/sinks/rabbitmq/rabbitmq-connection-type.js';
import { createRabbitmqSink } from '../../../src/sinks/rabbitmq/rabbitmq-sink.js';
import type { ContractKind } from './contract-kind.js';
import { envelopeTable, foldEnvelopes } from './normalised-rows.js';
import { serviceState } from './service-state.js';

/** The RabbitMQ sink on the local broker: an exchange per pipeline with a queue bound to all of it, its bookkeeping in the service's store. */
export const rabbitmqContract: ContractKind = {
  name: 'rabbitmq',
  cannot: {
    emptiesTargetOnReset: "a queue's messages belong to its consumers",
    reshapesWrittenRows: 'a message keeps the shape it was sent in',
    comparison: 'a queue cannot be read back as tables',
  },
  async start() {
    const admin = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
    const channel = await admin.createChannel();
    const store = await serviceState();
    const settings = await rabbitmqConnectionType.settings(
      'amqp://guest@127.0.0.1:5672/',
      { password: 'guest', tls: {} },
      NO_LOCAL_ACCESS,
    );
    const exchanges: string[] = [];
    return {
      async pipeline() {
        const { pipelineId, state } = await store.pipeline();
        const exchange = `contract.${randomUUID().slice(0, 8)}`;
        exchanges.push(exchange);
        // Bound before the sink publishes: a message no queue takes fails its batch.
        await channel.assertExchange(exchange, 'topic', { durable: true });
        const { queue } = await channel.assertQueue('', { exclusive: true, autoDelete: true });
        await channel.bindQueue(queue, exchange, '#');
        // Taking a message off the queue consumes it: the log keeps every one taken so far.
        const log: ChangeEnvelope[] = [];
        const read = async (table: TableSchema): Promise<ChangeEnvelope[]> => {
          for (
            let m = await channel.get(queue, { noAck: true });
            m;
            m = await channel.get(queue, { noAck: true })
          ) {
            log.push(JSON.parse(m.content.toString()) as ChangeEnvelope);
          }
          return log.filter((e) => e.table === envelopeTable(table));
        };
        return {
          async open(tables) {
            const sink = createRabbitmqSink({
              pipelineId,
              connection: settings,
              properties: { exchange },
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
        for (const exchange of exchanges) await channel.deleteExchange(exchange);
        await admin.close();
        await store.release();
      },
    };
  },
};
