import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { replicationDatabases, sqlOn, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');
const SECRET = `whsec-${randomUUID()}`;

/** Folds events in arrival order, each id once (a redelivery must be the same event), into rows by key. */
function fold(events: readonly ChangeEnvelope[]): Record<string, unknown> {
  const rows: Record<string, unknown> = {};
  const seen = new Map<string, string>();
  for (const e of events) {
    const body = JSON.stringify(e);
    const before = seen.get(e.id);
    if (before !== undefined) {
      expect(body, `redelivered ${e.id}`).toBe(before);
      continue;
    }
    seen.set(e.id, body);
    if (e.op === 'truncate') for (const id of Object.keys(rows)) delete rows[id];
    if (e.op === 'delete' || e.op === 'update') delete rows[String(e.key?.id)];
    if (e.after) rows[String(e.after.id)] = e.after;
  }
  return rows;
}

describe('PostgreSQL to a webhook, through the service', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  const events = () => received.flatMap((r) => (JSON.parse(r.body) as { events: ChangeEnvelope[] }).events);

  beforeAll(async () => {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'webhook_e2e');
    await sqlOn(
      dbs.source,
      `CREATE TABLE orders (id int PRIMARY KEY, qty int NOT NULL, price numeric(10,2), doc jsonb, big bigint);
       INSERT INTO orders SELECT g, g, g * 1.5, jsonb_build_object('n', g), 9007199254740993 FROM generate_series(1, 50) g;`,
    );
    const config = testConfig(dbs.store);
    config.connections.webhookAllowPrivate = true;
    service = await startTestService(config);
  });
  afterAll(async () => {
    await service?.request('PUT', '/v1/pipelines/to-hook/state', { state: 'stop' });
    await service?.stop();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  });

  it('creates a webhook connection, sealing its secret and keeping it through a masked update', async () => {
    const port = (receiver.address() as AddressInfo).port;
    const created = await service.request('POST', '/v1/connections', {
      name: 'hook',
      type: 'webhook',
      dsn: `http://127.0.0.1:${port}/in?team=7&secret=${encodeURIComponent(SECRET)}`,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(JSON.stringify(created.body)).not.toContain(SECRET);
    expect(created.body.dsn).toBe(`http://:****@127.0.0.1:${port}/in?team=7`);
    const shown = (await service.request('GET', '/v1/connections/hook')).body;
    expect(JSON.stringify(shown)).not.toContain(SECRET);
    // The DSN as shown, sent back, keeps the stored secret.
    const kept = await service.request('PUT', '/v1/connections/hook', {
      name: 'hook',
      type: 'webhook',
      dsn: shown.dsn,
    });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    // Without a secret, or to another URL with the mask, it is refused and the secret never echoed.
    for (const dsn of [`http://127.0.0.1:${port}/in?team=7`, `http://:****@127.0.0.1:${port}/other`]) {
      const refused = await service.request('PUT', '/v1/connections/hook', {
        name: 'hook',
        type: 'webhook',
        dsn,
      });
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe('INVALID_DSN');
    }
    const src = await service.request('POST', '/v1/connections', {
      name: 'src',
      type: 'postgres',
      dsn: dbs.source,
    });
    expect(src.status).toBe(201);
  });

  it('snapshots the table, then posts every change, signed, folding to the source rows', async () => {
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'to-hook',
      source: { connection: 'src', tables: ['public.orders'] },
      sink: { connection: 'hook', properties: { batch_max_events: '4' } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const started = await service.request('PUT', '/v1/pipelines/to-hook/state', { state: 'start' });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/to-hook/progress')).body.phase === 'streaming',
      'streaming',
    );
    const snapshot = events();
    expect(snapshot.length).toBe(50);
    expect(snapshot.every((e) => e.op === 'read')).toBe(true);
    expect(snapshot.find((e) => e.key?.id === 7)?.after).toEqual({
      id: 7,
      qty: 7,
      price: '10.50',
      doc: { n: 7 },
      big: '9007199254740993',
    });

    await sqlOn(dbs.source, 'INSERT INTO orders (id, qty) SELECT g, g FROM generate_series(51, 60) g');
    await sqlOn(dbs.source, 'UPDATE orders SET qty = -1 WHERE id = 1');
    await sqlOn(
      dbs.source,
      'BEGIN; UPDATE orders SET id = 200 WHERE id = 2; DELETE FROM orders WHERE id = 3; COMMIT',
    );
    await sqlOn(dbs.source, 'TRUNCATE orders');
    await sqlOn(
      dbs.source,
      'INSERT INTO orders (id, qty, price) SELECT g, g, 2.25 FROM generate_series(1, 5) g',
    );
    await sqlOn(
      dbs.source,
      'UPDATE orders SET doc = \'{"a": [1, 2]}\' WHERE id = 4; DELETE FROM orders WHERE id = 5',
    );

    const expected = async () =>
      Object.fromEntries(
        (await sqlOn(dbs.source, 'SELECT id, qty, price, doc, big FROM orders ORDER BY id')).map((r) => [
          String(r.id),
          r,
        ]),
      );
    await waitFor(
      async () => JSON.stringify(fold(events())) === JSON.stringify(await expected()),
      'the received events to fold to the source rows',
    );
    const changes = events().slice(50);
    expect(changes.map((e) => e.op)).toEqual([
      ...Array<string>(10).fill('insert'),
      'update',
      'update',
      'delete',
      'truncate',
      ...Array<string>(5).fill('insert'),
      'update',
      'delete',
    ]);
    // Batches of at most 4 events; every request signed with the connection's secret.
    expect(
      Math.max(...received.map((r) => (JSON.parse(r.body) as { events: unknown[] }).events.length)),
    ).toBe(4);
    for (const { headers, body } of received) {
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(headers['x-replicator-signature'])) ?? [];
      const expectedMac = createHmac('sha256', SECRET).update(`${t}.${body}`).digest();
      expect(timingSafeEqual(Buffer.from(String(v1), 'hex'), expectedMac)).toBe(true);
    }

    // The checkpoint is in the service's store and has moved past the changes.
    const metrics = (await service.request('GET', '/v1/pipelines/to-hook/metrics')).body;
    expect(metrics.sink_errors_total).toBe(0);
  });
});
