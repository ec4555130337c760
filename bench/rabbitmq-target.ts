import amqp, { type ConsumeMessage } from 'amqplib';
import { EnvelopeTally, type TalliedEnvelope } from './envelope-tally.js';
import { oneMessagePerRow, type RunShape, runTag, type SinkTarget } from './sink-target.js';

export const AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';

/** How long the drain check's consumer waits for a message before it gives up on the rest. */
const IDLE_MS = 5_000;

/**
 * A topic exchange of this run's own (`bench.<random>`) and a durable queue of its own bound to it
 * with `#`, both declared here before the pipeline starts: the sink publishes with `mandatory`,
 * so a message no queue takes would fail its batch. Backlog changes visible: the queue's message
 * count, the queue purged (untimed) after the snapshot check; the drain check consumes them.
 */
export async function rabbitmqTarget(shape: RunShape): Promise<SinkTarget> {
  const name = `bench.${runTag()}`;
  const connection = await amqp.connect(AMQP_URL);
  const channel = await connection.createChannel();
  await channel.assertExchange(name, 'topic', { durable: true });
  await channel.assertQueue(name, { durable: true });
  await channel.bindQueue(name, name, '#');
  const queued = async () => (await channel.checkQueue(name)).messageCount;
  return {
    kind: 'rabbitmq',
    dsn: `${AMQP_URL}/%2F`,
    properties: { exchange: name },
    where: `exchange \`${name}\`, queue \`${name}\``,
    checkSnapshot: async (source) => {
      const check = oneMessagePerRow(await queued(), source, 'messages');
      // The snapshot's messages out of the way, long before the drain is timed.
      await channel.purgeQueue(name);
      return check;
    },
    markDrainStart: async () => {},
    drainedChanges: queued,
    checkDrain: async () => {
      const tally = new EnvelopeTally(shape);
      const expected = await queued();
      let read = 0;
      let finish = () => {};
      const finished = new Promise<void>((resolve) => {
        finish = resolve;
      });
      // Done at the count queued, or once no message came for IDLE_MS (the tally then tells).
      let idle = setTimeout(finish, expected === 0 ? 0 : IDLE_MS);
      const { consumerTag } = await channel.consume(
        name,
        (m: ConsumeMessage | null) => {
          if (m === null) return finish();
          tally.add(JSON.parse(m.content.toString()) as TalliedEnvelope, m.properties.messageId ?? '');
          clearTimeout(idle);
          if (++read >= expected) finish();
          else idle = setTimeout(finish, IDLE_MS);
        },
        { noAck: true },
      );
      await finished;
      clearTimeout(idle);
      await channel.cancel(consumerTag);
      return tally.result();
    },
    cleanUp: async () => {
      try {
        await channel.deleteQueue(name);
        await channel.deleteExchange(name);
      } finally {
        await connection.close();
      }
    },
  };
}
