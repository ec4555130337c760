import { Redis } from 'ioredis';
import { REDIS_URL } from '../redis-target.js';
import type { ReferenceInput, SinkReference } from '../sink-reference.js';
import { runTag } from '../sink-target.js';
import { backlogEnvelopes, snapshotEnvelopes } from './reference-envelopes.js';

/** XADDs per pipeline (one write of the connection, one wait for its replies). */
const PIPELINE_COMMANDS = 200;
/** Pipelines written before the first one's replies are awaited: the server is never idle. */
const IN_FLIGHT = 8;

/**
 * The same envelopes as the sink's (field `event`, no trimming, as the sink's default `maxlen` 0),
 * `XADD`ed to a stream of the reference's own by plain pipelined commands on one connection: no
 * script, no checkpoint. Redis holds an entry once it answered its XADD, as it does the sink's.
 */
export function redisReference(): SinkReference {
  const redis = new Redis(REDIS_URL);
  const stream = `bench:${runTag()}:reference`;
  let messages: string[] = [];

  const load = async () => {
    const expected = messages.length;
    const before = await redis.xlen(stream);
    const pending: Promise<unknown>[] = [];
    for (let at = 0; at < messages.length; at += PIPELINE_COMMANDS) {
      const pipeline = redis.pipeline();
      for (const message of messages.slice(at, at + PIPELINE_COMMANDS))
        pipeline.xadd(stream, '*', 'event', message);
      pending.push(
        pipeline.exec().then((replies) => {
          const failed = replies?.find(([error]) => error);
          if (failed) throw failed[0];
        }),
      );
      if (pending.length >= IN_FLIGHT) await pending.shift();
    }
    await Promise.all(pending);
    const added = (await redis.xlen(stream)) - before;
    if (added !== expected) throw new Error(`the reference stream got ${added} entries, not ${expected}`);
  };

  return {
    method: `pipelined XADD of the sink's envelopes, ${PIPELINE_COMMANDS} a pipeline, ${IN_FLIGHT} pipelines in flight, one connection`,
    prepareSnapshot: async (input: ReferenceInput) => {
      messages = (await snapshotEnvelopes(input)).map((e) => e.text);
    },
    loadSnapshot: load,
    prepareDrain: async (input: ReferenceInput) => {
      messages = (await backlogEnvelopes(input)).map((e) => e.text);
    },
    loadDrain: load,
    cleanUp: async () => {
      messages = [];
      if (redis.status === 'end') return;
      try {
        await redis.del(stream);
      } finally {
        await redis.quit();
      }
    },
  };
}
