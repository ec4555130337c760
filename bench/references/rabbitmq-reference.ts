import amqp, { type ChannelModel, type ConfirmChannel, type Message } from 'amqplib';
import type { ChangeEvent } from '../../src/core/change.js';
import { changeEnvelopes, readEnvelope } from '../../src/sinks/change-envelope.js';
import { parseRabbitmqSinkProperties, type RabbitmqSinkConfig } from '../../src/sinks/rabbitmq/config.js';
import type { Outgoing } from '../../src/sinks/rabbitmq/confirms.js';
import { MessageBuilder } from '../../src/sinks/rabbitmq/message.js';
import { sqlOn } from '../../test/support/replication-fixture.js';
import { AMQP_URL } from '../rabbitmq-target.js';
import { backlogUpdatedId, type ReferenceInput, type SinkReference } from '../sink-reference.js';
import { runTag } from '../sink-target.js';
import { SNAPSHOT_TABLE } from '../snapshot-table.js';
import { copyRows } from './reference-envelopes.js';

/** Messages published and not yet confirmed, at most, per channel: the broker's credit flow paces the rest. */
const MAX_UNCONFIRMED = 20_000;
/** Channels publishing the snapshot side by side, each a share of the rows (the sink copies two partitions at once). */
const SNAPSHOT_CHANNELS = 2;
/** WAL bytes between two backlog commits, about as the backlog writes them: ids of the sink's length. */
const WAL_PER_TRANSACTION = 440n;

const TABLE = { schema: 'public', table: 'bench_snapshot' };

/**
 * Publishes `messages` on a confirm channel the ordinary fast way: without awaiting each one,
 * pausing only while the channel's buffer is full ('drain') or `MAX_UNCONFIRMED` await their
 * confirm; resolves once all are confirmed. A nack, a return (unroutable) or a closed channel fails it.
 */
function publishAll(channel: ConfirmChannel, messages: readonly Outgoing[]): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let next = 0;
    let unconfirmed = 0;
    let blocked = false;
    let failed = false;
    const fail = (error: Error) => {
      if (failed) return;
      failed = true;
      channel.off('drain', onDrain);
      channel.off('return', onReturn);
      reject(error);
    };
    const onReturn = (m: Message) => fail(new Error(`message ${m.properties.messageId} returned unroutable`));
    const onDrain = () => {
      blocked = false;
      pump();
    };
    const onConfirm = (error: unknown) => {
      if (error) return fail(error instanceof Error ? error : new Error(String(error)));
      unconfirmed--;
      if (next === messages.length && unconfirmed === 0 && !failed) {
        channel.off('drain', onDrain);
        channel.off('return', onReturn);
        resolve();
      } else if (!blocked) pump();
    };
    const pump = () => {
      while (!failed && !blocked && next < messages.length && unconfirmed < MAX_UNCONFIRMED) {
        const m = messages[next++] as Outgoing;
        unconfirmed++;
        if (!channel.publish(m.exchange, m.routingKey, m.content, m.options, onConfirm)) blocked = true;
      }
    };
    channel.on('drain', onDrain);
    channel.on('return', onReturn);
    channel.once('close', () => fail(new Error('the channel closed')));
    if (messages.length === 0) resolve();
    else pump();
  });
}

/**
 * RabbitMQ's reference: the same AMQP messages as the sink's (its envelopes, properties and
 * routing), persistent and `mandatory`, published on confirm channels with many confirms in
 * flight, into an exchange and durable queue of its own declared as the benchmark declares the
 * sink's; done once the broker confirmed every message (a confirm of a persistent message routed
 * to a durable queue means the queue has it on disk).
 */
export function rabbitmqReference(): SinkReference {
  const name = `bench.ref.${runTag()}`;
  const config: RabbitmqSinkConfig = parseRabbitmqSinkProperties({ exchange: name });
  const builder = new MessageBuilder(config);
  let connection: ChannelModel | undefined;
  let admin: amqp.Channel | undefined;
  let snapshot: Outgoing[][] = [];
  let drain: Outgoing[] = [];
  let expectedSnapshot = 0;

  const connected = async (): Promise<ChannelModel> => {
    if (!connection) {
      connection = await amqp.connect(AMQP_URL);
      admin = await connection.createChannel();
      await admin.assertExchange(name, 'topic', { durable: true });
      await admin.assertQueue(name, { durable: true });
      await admin.bindQueue(name, name, '#');
    }
    return connection;
  };
  const queued = async () => (await (admin as amqp.Channel).checkQueue(name)).messageCount;
  const publishOn = async (batches: readonly Outgoing[][]) => {
    const model = await connected();
    const channels = await Promise.all(batches.map(() => model.createConfirmChannel()));
    try {
      await Promise.all(batches.map((messages, i) => publishAll(channels[i] as ConfirmChannel, messages)));
    } finally {
      await Promise.all(channels.map((channel) => channel.close().catch(() => undefined)));
    }
  };

  return {
    method: `amqplib confirm channels (${SNAPSHOT_CHANNELS} for the snapshot, 1 for the drain), up to ${MAX_UNCONFIRMED.toLocaleString('en-US')} unconfirmed each, the sink's messages (persistent, mandatory) into a durable queue`,
    async prepareSnapshot(input: ReferenceInput) {
      await connected();
      const { table, rows } = await copyRows(input.snapshotUrl, `SELECT * FROM ${SNAPSHOT_TABLE}`);
      const now = Date.now();
      const messages = rows.map((row) => builder.messageOf(table, readEnvelope(table, row), now));
      const share = Math.ceil(messages.length / SNAPSHOT_CHANNELS);
      snapshot = Array.from({ length: SNAPSHOT_CHANNELS }, (_, i) =>
        messages.slice(i * share, (i + 1) * share),
      );
      expectedSnapshot = messages.length;
    },
    async loadSnapshot() {
      await publishOn(snapshot);
    },
    async prepareDrain(input: ReferenceInput) {
      const held = await queued();
      if (held !== expectedSnapshot)
        throw new Error(
          `the reference's queue holds ${held} messages after the snapshot, not ${expectedSnapshot}`,
        );
      await (admin as amqp.Channel).purgeQueue(name);
      snapshot = [];
      const { rows: n, transactions } = input.shape;
      // Each transaction's update, then its insert: the ids in commit order.
      const ids: number[] = [];
      for (let k = 1; k <= transactions; k++) ids.push(backlogUpdatedId(input.shape, k), n + k);
      const { table, rows } = await copyRows(
        input.backlogUrl,
        `SELECT s.* FROM unnest('{${ids.join(',')}}'::bigint[]) WITH ORDINALITY AS w(id, ord) JOIN ${SNAPSHOT_TABLE} s USING (id) ORDER BY w.ord`,
      );
      if (rows.length !== ids.length)
        throw new Error(`read ${rows.length} backlog rows, expected ${ids.length}`);
      // Commit positions and times like the backlog's, ending at the source's WAL position now.
      const [end] = await sqlOn<{ lsn: string }>(
        input.backlogUrl,
        'SELECT pg_current_wal_lsn()::text AS lsn',
      );
      const [high, low] = (end?.lsn ?? '0/0').split('/').map((h) => BigInt(`0x${h}`)) as [bigint, bigint];
      const first = ((high << 32n) | low) - BigInt(transactions) * WAL_PER_TRANSACTION;
      const started = Date.now() - transactions;
      const changes: ChangeEvent[] = rows.map((row, i) => {
        const k = Math.floor(i / 2) + 1;
        const commitTime = `${new Date(started + k).toISOString().slice(0, -1)}${String(k % 1000).padStart(3, '0')}Z`;
        return {
          op: i % 2 === 0 ? 'update' : 'insert',
          table: TABLE,
          after: row,
          commitLsn: first + BigInt(k) * WAL_PER_TRANSACTION,
          xid: 1000 + k,
          commitTime,
        };
      });
      const { envelopes } = changeEnvelopes(changes, () => table, new Map());
      const now = Date.now();
      drain = envelopes.map(({ envelope }) => builder.messageOf(TABLE, envelope, now));
    },
    async loadDrain() {
      await publishOn([drain]);
      const held = await queued();
      if (held !== drain.length)
        throw new Error(`the reference's queue holds ${held} messages, not ${drain.length}`);
    },
    async cleanUp() {
      snapshot = [];
      drain = [];
      const model = connection;
      connection = undefined;
      if (!model) return;
      try {
        const channel = await model.createChannel();
        await channel.deleteQueue(name);
        await channel.deleteExchange(name);
      } finally {
        await model.close().catch(() => undefined);
      }
    },
  };
}
