import { randomUUID } from 'node:crypto';
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { replicationDatabases, sqlOn, waitAcknowledged, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { queryStore } from '../support/store-query.js';

const [cluster] = inject('pgClusters');

/** A message as a consumer gets it: the `Nats-Msg-Id` header and the envelope. */
interface Stored {
  msgId: string | undefined;
  envelope: ChangeEnvelope;
}

/** The rows a consumer holds after folding the messages in order, each id once. */
function fold(messages: readonly Stored[]): Map<number, Record<string, unknown>> {
  const rows = new Map<number, Record<string, unknown>>();
  const seen = new Set<string>();
  for (const { envelope: e } of messages) {
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    if (e.op === 'truncate') rows.clear();
    else if (e.op === 'delete') rows.delete(Number(e.key?.id));
    else {
      if (e.op === 'update') rows.delete(Number(e.key?.id));
      rows.set(Number(e.after?.id), e.after as Record<string, unknown>);
    }
  }
  return rows;
}

describe('PostgreSQL to a NATS JetStream stream, through the service', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  const tag = randomUUID().replaceAll('-', '').slice(0, 10);
  const stream = `E2E_${tag}`;
  const subject = `e2e${tag}.public.orders`;

  /** Every message of the stream, in order, through a JetStream consumer. */
  const read = async (): Promise<Stored[]> => {
    const count = (await jsm.streams.info(stream)).state.messages;
    const out: Stored[] = [];
    if (count === 0) return out;
    const consumer = await js.consumers.get(stream);
    while (out.length < count) {
      const messages = await consumer.fetch({ max_messages: count - out.length, expires: 5_000 });
      for await (const m of messages) {
        expect(m.subject).toBe(subject);
        out.push({ msgId: m.headers?.get('Nats-Msg-Id'), envelope: m.json<ChangeEnvelope>() });
      }
    }
    return out;
  };

  const sourceRows = async () =>
    new Map(
      (
        await sqlOn<{ id: number; qty: number; price: string | null; doc: unknown; big: string | null }>(
          dbs.source,
          'SELECT id, qty, price::text AS price, doc, big::text AS big FROM orders ORDER BY id',
        )
      ).map((r) => [r.id, r]),
    );

  beforeAll(async () => {
    nc = await connect({ servers: '127.0.0.1:4222' });
    js = jetstream(nc);
    jsm = await jetstreamManager(nc);
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'nats_e2e');
    await sqlOn(
      dbs.source,
      `CREATE TABLE orders (id int PRIMARY KEY, qty int NOT NULL, price numeric(10,2), doc jsonb, big bigint);
       INSERT INTO orders SELECT g, g, g * 1.5, jsonb_build_object('n', g), 9007199254740993 FROM generate_series(1, 50) g;`,
    );
    service = await startTestService(testConfig(dbs.store));
  });
  afterAll(async () => {
    await service?.request('PUT', '/v1/pipelines/to-nats/state', { state: 'stop' });
    await service?.stop();
    await jsm?.streams.delete(stream).catch(() => undefined);
    await nc?.close();
  });

  it('creates a nats connection, hiding its password, and refuses a DSN it does not take', async () => {
    const secret = `tok-${tag}`;
    const created = await service.request('POST', '/v1/connections', {
      name: 'bus',
      type: 'nats',
      dsn: `nats://app:${secret}@127.0.0.1:4222`,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(JSON.stringify(created.body)).not.toContain(secret);
    expect(created.body.dsn).toBe('nats://app:****@127.0.0.1:4222');
    const refused = await service.request('POST', '/v1/connections', {
      name: 'bus2',
      type: 'nats',
      dsn: `nats://127.0.0.1:4222?token=${secret}`,
    });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('INVALID_DSN');
    expect(JSON.stringify(refused.body)).not.toContain(secret);
    const src = await service.request('POST', '/v1/connections', {
      name: 'src',
      type: 'postgres',
      dsn: dbs.source,
    });
    expect(src.status).toBe(201);
  });

  it('refuses a pipeline whose tables would be published to a reserved subject', async () => {
    const refused = await service.request('POST', '/v1/pipelines', {
      name: 'inbox',
      source: { connection: 'src', tables: ['_INBOX.orders'] },
      sink: { connection: 'bus', properties: { subject: '{schema}.{table}', stream } },
    });
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(refused.body.code).toBe('VALIDATION_FAILED');
    expect(refused.body.error).toContain(
      'sink.properties.subject: _INBOX.orders cannot be published: its subject starts with _INBOX',
    );
  });

  it('refuses a pipeline whose stream exists without its subjects, asking the server', async () => {
    const other = `${stream}_OTHER`;
    await jsm.streams.add({ name: other, subjects: [`e2e${tag}.other`] });
    try {
      const refused = await service.request('POST', '/v1/pipelines', {
        name: 'elsewhere',
        source: { connection: 'src', tables: ['public.orders'] },
        sink: { connection: 'bus', properties: { subject: `e2e${tag}.{schema}.{table}`, stream: other } },
      });
      expect(refused.status, JSON.stringify(refused.body)).toBe(422);
      expect(refused.body.error).toContain(
        `sink.properties.stream: stream ${other} does not capture subject e2e${tag}.public.orders`,
      );
    } finally {
      await jsm.streams.delete(other);
    }
  });

  it('snapshots the table, then publishes every change, read back and folded by id to the source', async () => {
    // The test server has no authentication: a connection without it is what a pipeline can use.
    const replaced = await service.request('PUT', '/v1/connections/bus', {
      name: 'bus',
      type: 'nats',
      dsn: 'nats://127.0.0.1:4222',
    });
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'to-nats',
      source: { connection: 'src', tables: ['public.orders'] },
      sink: {
        connection: 'bus',
        properties: { subject: `e2e${tag}.{schema}.{table}`, stream, batch_max_events: '4' },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const started = await service.request('PUT', '/v1/pipelines/to-nats/state', { state: 'start' });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/to-nats/progress')).body.phase === 'streaming',
      'streaming',
    );

    const snapshot = await read();
    expect(snapshot.length).toBe(50);
    expect(new Set(snapshot.map((m) => m.envelope.id)).size).toBe(50);
    expect(snapshot.find((m) => m.envelope.key?.id === 7)).toEqual({
      msgId: 'snapshot/public/orders/["7"]',
      envelope: {
        id: 'snapshot/public/orders/["7"]',
        op: 'read',
        table: 'public.orders',
        key: { id: 7 },
        before: null,
        after: { id: 7, qty: 7, price: '10.50', doc: { n: 7 }, big: '9007199254740993' },
        lsn: null,
        commit_time: null,
      },
    });

    // Ten inserts in one transaction: more than a batch (batch_max_events 4), so it comes in pieces.
    await sqlOn(dbs.source, 'INSERT INTO orders (id, qty) SELECT g, g FROM generate_series(51, 60) g');
    await sqlOn(dbs.source, 'UPDATE orders SET qty = -1 WHERE id = 1');
    await sqlOn(
      dbs.source,
      'BEGIN; UPDATE orders SET id = 200 WHERE id = 2; DELETE FROM orders WHERE id = 3; COMMIT',
    );
    await waitFor(async () => (await read()).length >= 50 + 13, 'the changes before the truncate');
    const beforeTruncate = await read();
    const expectedBefore = await sourceRows();
    expect([...fold(beforeTruncate).entries()].sort(([a], [b]) => a - b)).toEqual(
      [...expectedBefore.entries()].map(([id, r]) => [id, r]),
    );

    await sqlOn(dbs.source, 'TRUNCATE orders');
    await sqlOn(dbs.source, 'INSERT INTO orders (id, qty, doc) VALUES (1, 1, \'[1, "a"]\'), (2, 2, NULL)');
    await waitFor(async () => (await read()).length >= 50 + 16, 'every change in the stream');
    // Until the pipeline has acknowledged all of it: a duplicate would be sent before that.
    await waitAcknowledged(dbs.source);
    const all = await read();
    const changes = all.slice(50);
    expect(changes.map((m) => [m.envelope.op, m.envelope.key?.id ?? null])).toEqual([
      ...Array.from({ length: 10 }, (_, i) => ['insert', 51 + i]),
      ['update', 1],
      ['update', 2],
      ['delete', 3],
      ['truncate', null],
      ['insert', 1],
      ['insert', 2],
    ]);
    expect(all.every((m) => m.msgId === m.envelope.id)).toBe(true);
    expect(new Set(all.map((m) => m.envelope.id)).size).toBe(all.length);
    const folded = fold(all);
    expect([...folded.entries()]).toEqual([...(await sourceRows()).entries()]);
    expect(folded.get(1)).toEqual({ id: 1, qty: 1, price: null, doc: [1, 'a'], big: null });

    // The checkpoint is in the service's store, at or past the last change's commit.
    const pipeline = (await service.request('GET', '/v1/pipelines/to-nats')).body;
    const last = changes.at(-1)?.envelope.lsn as string;
    await waitFor(async () => {
      const [row] = await queryStore<{ past: boolean; epoch: number }>(
        dbs.store,
        'SELECT lsn >= $2::pg_lsn AS past, epoch FROM sink_checkpoints WHERE pipeline_id = $1',
        [pipeline.id, last],
      );
      return row?.past === true && row.epoch >= 1;
    }, 'the checkpoint past the last change');
  });
});
