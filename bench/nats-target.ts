import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { EnvelopeTally, type TalliedEnvelope } from './envelope-tally.js';
import { oneMessagePerRow, type RunShape, runTag, type SinkTarget } from './sink-target.js';
import { SNAPSHOT_TABLE } from './snapshot-table.js';

export const NATS_URL = 'nats://127.0.0.1:4222';

/** Messages asked for at a time when the drain check reads the stream back. */
const FETCH_MAX = 10_000;

/**
 * A JetStream stream of this run's own (`BENCH_<random>`), which the sink creates, capturing the
 * subject `bench<random>.{schema}.{table}`. Backlog changes visible: the stream's messages beyond
 * the snapshot's (the stream drops a message whose `Nats-Msg-Id` it already holds, within its
 * duplicate window); the drain check reads them back from the sequence after the snapshot's.
 */
export async function natsTarget(shape: RunShape): Promise<SinkTarget> {
  const tag = runTag();
  const stream = `BENCH_${tag}`;
  const subject = `bench${tag}.{schema}.{table}`;
  const nc = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(nc);
  const state = async () => (await jsm.streams.info(stream)).state;
  let snapshot = { messages: 0, lastSeq: 0 };
  return {
    kind: 'nats',
    dsn: NATS_URL,
    properties: { subject, stream },
    where: `stream \`${stream}\`, subject \`${subject.replace('{schema}.{table}', SNAPSHOT_TABLE)}\``,
    checkSnapshot: async (source) => oneMessagePerRow((await state()).messages, source, 'messages'),
    markDrainStart: async () => {
      const { messages, last_seq } = await state();
      snapshot = { messages, lastSeq: last_seq };
    },
    drainedChanges: async () => (await state()).messages - snapshot.messages,
    checkDrain: async () => {
      const tally = new EnvelopeTally(shape);
      const expected = (await state()).last_seq - snapshot.lastSeq;
      // An ordered consumer from the first sequence after the snapshot's, read in fetches.
      const consumer = await jetstream(nc).consumers.get(stream, {
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: snapshot.lastSeq + 1,
      });
      for (let read = 0; read < expected; ) {
        const batch = await consumer.fetch({
          max_messages: Math.min(FETCH_MAX, expected - read),
          expires: 5_000,
        });
        let got = 0;
        for await (const m of batch) {
          tally.add(m.json<TalliedEnvelope>(), m.headers?.get('Nats-Msg-Id') ?? '');
          got++;
        }
        if (got === 0) break;
        read += got;
      }
      return tally.result();
    },
    cleanUp: async () => {
      try {
        await jsm.streams.delete(stream).catch(() => undefined);
      } finally {
        await nc.close();
      }
    },
  };
}
