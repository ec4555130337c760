import { randomUUID } from 'node:crypto';
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseLsn } from '../../src/core/lsn.js';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { replicationDatabases, sqlOn, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const [cluster] = inject('pgClusters');

/**
 * The NATS server goes away mid-stream (its connections cut, new ones refused, through a proxy, so
 * the server other test files share keeps running) while the source keeps changing, then comes
 * back: the errors are counted, the pipeline catches up with nothing lost, and what was published
 * again is dropped by the stream within its duplicate window.
 */
describe('a NATS server down mid-stream', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  let proxy: TcpProxy;
  const tag = randomUUID().replaceAll('-', '').slice(0, 10);
  const stream = `OUTAGE_${tag}`;

  beforeAll(async () => {
    nc = await connect({ servers: '127.0.0.1:4222' });
    js = jetstream(nc);
    jsm = await jetstreamManager(nc);
    proxy = await TcpProxy.start('127.0.0.1', 4222);
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'nats_outage');
    await sqlOn(
      dbs.source,
      `CREATE TABLE items (id int PRIMARY KEY, v text);
       INSERT INTO items SELECT g, 'seed ' || g FROM generate_series(1, 100) g;`,
    );
    service = await startTestService(testConfig(dbs.store));
    for (const connection of [
      { name: 'src', type: 'postgres', dsn: dbs.source },
      { name: 'bus', type: 'nats', dsn: `nats://127.0.0.1:${proxy.listenPort}` },
    ]) {
      const created = await service.request('POST', '/v1/connections', connection);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
  });
  afterAll(async () => {
    await service?.request('PUT', '/v1/pipelines/to-nats/state', { state: 'stop' });
    await service?.stop();
    await proxy?.stop();
    await jsm?.streams.delete(stream).catch(() => undefined);
    await nc?.close();
  });

  /** Every message of the stream, in order. */
  const read = async (): Promise<ChangeEnvelope[]> => {
    const count = (await jsm.streams.info(stream)).state.messages;
    const out: ChangeEnvelope[] = [];
    if (count === 0) return out;
    const consumer = await js.consumers.get(stream);
    while (out.length < count) {
      const messages = await consumer.fetch({ max_messages: count - out.length, expires: 5_000 });
      for await (const m of messages) out.push(m.json<ChangeEnvelope>());
    }
    return out;
  };

  const sourceRows = async () =>
    Object.fromEntries(
      (await sqlOn<{ id: number; v: string }>(dbs.source, 'SELECT id, v FROM items ORDER BY id')).map((r) => [
        r.id,
        r.v,
      ]),
    );

  /** The rows a consumer holds after folding the messages in order. */
  const folded = (envelopes: readonly ChangeEnvelope[]) => {
    const rows: Record<string, unknown> = {};
    for (const e of envelopes) {
      if (e.op === 'delete') delete rows[String(e.key?.id)];
      else if (e.after) rows[String(e.after.id)] = e.after.v;
    }
    return rows;
  };

  const sinkErrors = async (): Promise<number> =>
    (await service.request('GET', '/v1/pipelines/to-nats/metrics')).body.sink_errors_total;

  it('publishes every change once it returns, the ones published again dropped by the stream', async () => {
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'to-nats',
      source: { connection: 'src', tables: ['public.items'] },
      sink: { connection: 'bus', properties: { subject: `outage${tag}.{schema}.{table}`, stream } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await service.request('PUT', '/v1/pipelines/to-nats/state', { state: 'start' })).status).toBe(
      200,
    );
    await waitFor(async () => (await read().catch(() => [])).length >= 100, 'the snapshot');
    expect(await sinkErrors()).toBe(0);

    // Changes while the stream is reachable, one going on as the connection is cut.
    await sqlOn(dbs.source, `UPDATE items SET v = v || ' early' WHERE id <= 10`);
    const cut = proxy.down();
    await sqlOn(dbs.source, `INSERT INTO items SELECT g, 'during ' || g FROM generate_series(1000, 1199) g`);
    await cut;
    for (let i = 0; i < 5; i++) {
      const base = 2000 + i * 10;
      await sqlOn(
        dbs.source,
        `INSERT INTO items SELECT g, 'new ' || g FROM generate_series(${base}, ${base + 9}) g;
         UPDATE items SET v = v || ' changed' WHERE id = ${i + 20};
         DELETE FROM items WHERE id = ${50 + i};`,
      );
    }
    await waitFor(async () => (await sinkErrors()) > 0, 'a failed sink write counted', 60_000);
    const pipeline = (await service.request('GET', '/v1/pipelines/to-nats')).body;
    expect(pipeline.state).not.toBe('failed');
    await proxy.up();

    const expected = await sourceRows();
    await waitFor(
      async () => JSON.stringify(folded(await read())) === JSON.stringify(expected),
      'the stream to catch up with the source',
      90_000,
    );
    expect((await service.request('GET', '/v1/pipelines/to-nats')).body.state).toBe('running');
    // Within the duplicate window the stream kept each id once, whatever was published again.
    const envelopes = await read();
    expect(new Set(envelopes.map((e) => e.id)).size).toBe(envelopes.length);
    expect(envelopes.filter((e) => e.op !== 'read').length).toBe(10 + 200 + 5 * 12);
    // Each row's changes in the order they were made: their commit positions never go back.
    const lastOf = new Map<string, bigint>();
    for (const e of envelopes) {
      if (e.lsn === null) continue;
      const row = String(e.key?.id);
      const lsn = parseLsn(e.lsn);
      expect(lsn, `row ${row}`).toBeGreaterThanOrEqual(lastOf.get(row) ?? 0n);
      lastOf.set(row, lsn);
    }
  });
});
