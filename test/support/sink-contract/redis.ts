import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { NO_LOCAL_ACCESS } from '../../../src/connections/local-access.js';
import type { TableSchema } from '../../../src/core/change.js';
import type { ChangeEnvelope } from '../../../src/sinks/change-envelope.js';
import { redisConnectionType } from '../../../src/sinks/redis/redis-connection-type.js';
import { createRedisSink } from '../../../src/sinks/redis/redis-sink.js';
import { memorySinkState } from '../memory-sink-state.js';
import type { ContractKind } from './contract-kind.js';
import { foldEnvelopes } from './normalised-rows.js';

const REDIS_URL = 'redis://127.0.0.1:6379/0';

/** The Redis Streams sink on the local Redis: a stream prefix and bookkeeping keys per pipeline. */
export const redisContract: ContractKind = {
  name: 'redis',
  cannot: {
    emptiesTargetOnReset: "a stream's entries belong to its consumers",
    reshapesWrittenRows: 'an entry keeps the shape it was added in',
    comparison: 'a stream cannot be read back as tables',
  },
  async start() {
    const admin = new Redis(REDIS_URL);
    const settings = await redisConnectionType.settings(REDIS_URL, { tls: {} }, NO_LOCAL_ACCESS);
    const prefixes: string[] = [];
    return {
      async pipeline() {
        const pipelineId = randomUUID();
        const prefix = `contract:${pipelineId.slice(0, 8)}`;
        prefixes.push(prefix, `replicator:${pipelineId}`);
        const read = async (table: TableSchema): Promise<ChangeEnvelope[]> =>
          (await admin.xrange(`${prefix}:${table.schema}.${table.table}`, '-', '+')).map(
            ([, fields]) => JSON.parse(fields[1] as string) as ChangeEnvelope,
          );
        return {
          async open(tables) {
            // Redis keeps the checkpoint and markers itself, next to the streams.
            const sink = createRedisSink({
              pipelineId,
              connection: settings,
              properties: { stream: `${prefix}:{schema}.{table}` },
              state: memorySinkState(),
            });
            await sink.open(tables);
            return sink;
          },
          rows: async (table) => foldEnvelopes(table, await read(table)),
          messageIds: async (table) => (await read(table)).map((e) => e.id),
        };
      },
      async stop() {
        for (const prefix of prefixes) {
          const keys = await admin.keys(`${prefix}:*`);
          if (keys.length > 0) await admin.del(...keys);
        }
        await admin.quit();
      },
    };
  },
};
