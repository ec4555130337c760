import { Redis } from 'ioredis';
import { EnvelopeTally, type TalliedEnvelope } from './envelope-tally.js';
import { oneMessagePerRow, type RunShape, runTag, type SinkTarget } from './sink-target.js';
import { SNAPSHOT_TABLE } from './snapshot-table.js';

export const REDIS_URL = 'redis://127.0.0.1:6379/0';

/**
 * The Redis database 0, with a stream key of this run's own (`bench:<random>:{schema}.{table}`).
 * Backlog changes visible: the stream's length (`XLEN`, one entry per change) beyond the
 * snapshot's entries.
 */
export async function redisTarget(shape: RunShape): Promise<SinkTarget> {
  const prefix = `bench:${runTag()}`;
  const stream = `${prefix}:${SNAPSHOT_TABLE}`;
  const redis = new Redis(REDIS_URL);
  let drainFrom = '0-0';
  return {
    kind: 'redis',
    dsn: REDIS_URL,
    properties: { stream: `${prefix}:{schema}.{table}` },
    where: `stream \`${stream}\``,
    // A snapshot row is one `read` entry: a duplicate would make the stream longer.
    checkSnapshot: async (source) => oneMessagePerRow(await redis.xlen(stream), source, 'entries'),
    markDrainStart: async () => {
      const [last] = await redis.xrevrange(stream, '+', '-', 'COUNT', 1);
      drainFrom = last?.[0] ?? '0-0';
    },
    drainedChanges: async () => (await redis.xlen(stream)) - shape.rows,
    checkDrain: async () => {
      // Every entry after the snapshot's, read in pages, in the order written.
      const tally = new EnvelopeTally(shape);
      let from = `(${drainFrom}`;
      for (;;) {
        const page = await redis.xrange(stream, from, '+', 'COUNT', 10_000);
        if (page.length === 0) break;
        for (const [entryId, fields] of page) {
          tally.add(JSON.parse(fields[1] as string) as TalliedEnvelope);
          from = `(${entryId}`;
        }
      }
      return tally.result();
    },
    cleanUp: async (pipelineId) => {
      try {
        const keys = [
          ...(await redis.keys(`${prefix}:*`)),
          ...(pipelineId ? await redis.keys(`replicator:${pipelineId}:*`) : []),
        ];
        if (keys.length > 0) await redis.del(...keys);
      } finally {
        await redis.quit();
      }
    },
  };
}
