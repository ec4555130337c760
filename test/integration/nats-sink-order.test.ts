import { randomUUID } from 'node:crypto';
import { type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import type { ChangeEvent } from '../../src/core/change.js';
import type { Sink } from '../../src/core/sink.js';
import { isUnreachable } from '../../src/runtime/error-kinds.js';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { natsConnectionType } from '../../src/sinks/nats/nats-connection-type.js';
import { createNatsSink } from '../../src/sinks/nats/nats-sink.js';
import { memorySinkState } from '../support/memory-sink-state.js';
import { ev, orders, tx } from '../support/message-sink-fixtures.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { waitFor } from '../support/wait-for.js';

/**
 * Each row's changes stay in order when publishing fails part way through a batch, with many
 * messages awaiting their acks at once: the batch is published again from the checkpoint, and the
 * stream ends up holding every change once, each row's in the order they were made.
 */
describe('nats sink, a batch failing part way', () => {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const opened: Sink[] = [];
  const streams: string[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: '127.0.0.1:4222' });
    jsm = await jetstreamManager(nc);
  });
  afterEach(async () => {
    for (const sink of opened.splice(0)) await sink.close();
  });
  afterAll(async () => {
    for (const stream of streams) await jsm.streams.delete(stream).catch(() => undefined);
    await nc.close();
  });

  const tag = () => randomUUID().replaceAll('-', '').slice(0, 10);

  async function openSink(url: string, prefix: string, stream: string, state = memorySinkState()) {
    const settings = await natsConnectionType.settings(url, { tls: {} }, NO_LOCAL_ACCESS);
    const sink = createNatsSink({
      pipelineId: randomUUID(),
      connection: settings,
      properties: { subject: `${prefix}.{schema}.{table}`, stream },
      state,
    });
    opened.push(sink);
    await sink.open([orders]);
    return { sink, state };
  }

  /** Every message of the stream, in stream order. */
  async function read(stream: string): Promise<ChangeEnvelope[]> {
    const count = (await jsm.streams.info(stream)).state.messages;
    const consumer = await jetstream(nc).consumers.get(stream);
    const out: ChangeEnvelope[] = [];
    while (out.length < count) {
      const batch = await consumer.fetch({ max_messages: count - out.length, expires: 5_000 });
      for await (const m of batch) out.push(m.json<ChangeEnvelope>());
    }
    return out;
  }

  /** Each row's `total`s in stream order, by the row's id. */
  function totalsByRow(envelopes: readonly ChangeEnvelope[]): Map<number, string[]> {
    const rows = new Map<number, string[]>();
    for (const e of envelopes) {
      const id = Number(e.key?.id);
      rows.set(id, [...(rows.get(id) ?? []), String(e.after?.total)]);
    }
    return rows;
  }

  it('is published again from the checkpoint after its connection is cut, every row in order, none lost or doubled', async () => {
    const ROWS = 200;
    const ROUNDS = 60;
    const proxy = await TcpProxy.start('127.0.0.1', 4222);
    try {
      const t = tag();
      const [prefix, stream] = [`order${t}`, `ORDER_${t}`];
      streams.push(stream);
      const url = `nats://127.0.0.1:${proxy.listenPort}`;
      const { sink, state } = await openSink(url, prefix, stream);
      // Round r: one transaction updating every row, so each row has a change every ROWS messages.
      const changes: ChangeEvent[] = [];
      for (let r = 1; r <= ROUNDS; r++) {
        const t = tx(r);
        for (let id = 1; id <= ROWS; id++)
          changes.push(ev(t, { op: 'update', after: { id: String(id), total: `${r}.00`, note: 'n' } }));
      }
      const batch = { changes, commitLsn: tx(ROUNDS).end, epoch: 1 };

      // The connection is cut as the server takes the batch's 2,000th message: a core subscription
      // sees each message as the stream is given it.
      let seen = 0;
      let cut: Promise<void> | undefined;
      const watcher = nc.subscribe(`${prefix}.>`, {
        callback: () => {
          if (++seen === 2_000) cut = proxy.down();
        },
      });
      const failure = await sink.applyBatch(batch).catch((error: unknown) => error);
      watcher.unsubscribe();
      await cut;
      expect(failure).toBeInstanceOf(Error);
      expect(isUnreachable(failure)).toBe(true);
      expect(await state.readCheckpoint()).toBeNull();
      const stored = (await jsm.streams.info(stream)).state.messages;
      expect(stored).toBeGreaterThanOrEqual(2_000);
      expect(stored).toBeLessThan(changes.length);

      // The runtime opens the sink again once the server is back, and publishes the batch again.
      await proxy.up();
      await waitFor(
        async () =>
          sink.open([orders]).then(
            () => true,
            () => false,
          ),
        'the sink to reconnect',
      );
      await sink.applyBatch(batch);
      expect((await state.readCheckpoint())?.lsn).toBe(batch.commitLsn);

      const envelopes = await read(stream);
      expect(envelopes).toHaveLength(changes.length);
      expect(new Set(envelopes.map((e) => e.id)).size).toBe(changes.length);
      const expected = Array.from({ length: ROUNDS }, (_, i) => `${i + 1}.00`);
      const byRow = totalsByRow(envelopes);
      expect(byRow.size).toBe(ROWS);
      for (const totals of byRow.values()) expect(totals).toEqual(expected);
    } finally {
      await proxy.stop();
    }
  });

  it("does not store a row's next change ahead of one the stream refused", async () => {
    const t = tag();
    const [prefix, stream] = [`order${t}`, `ORDER_${t}`];
    streams.push(stream);
    // A stream of the user's, taking messages of up to 1 KiB: the large change is refused.
    await jsm.streams.add({ name: stream, subjects: [`${prefix}.*.*`], max_msg_size: 1024 });
    const { sink, state } = await openSink('nats://127.0.0.1:4222', prefix, stream);
    const t1 = tx(1);
    const row = (id: number, total: string, note = 'n') => ({ id: String(id), total, note });
    const batch = {
      changes: [
        ev(t1, { op: 'update', after: row(1, '1.00', 'x'.repeat(2048)) }),
        ev(t1, { op: 'update', after: row(2, '1.00') }),
        ev(t1, { op: 'update', after: row(1, '2.00') }),
        ev(t1, { op: 'update', after: row(3, '1.00') }),
      ],
      commitLsn: t1.end,
      epoch: 1,
    };
    await expect(sink.applyBatch(batch)).rejects.toThrow(/message size exceeds maximum/);
    expect(await state.readCheckpoint()).toBeNull();
    // Row 2 went out beside the refused change; row 1's next change did not.
    expect(totalsByRow(await read(stream))).toEqual(new Map([[2, ['1.00']]]));

    await jsm.streams.update(stream, { max_msg_size: 1024 * 1024 });
    await sink.applyBatch(batch);
    const byRow = totalsByRow(await read(stream));
    expect(byRow.get(1)).toEqual(['1.00', '2.00']);
    expect(byRow.get(2)).toEqual(['1.00']);
    expect(byRow.get(3)).toEqual(['1.00']);
  });
});
