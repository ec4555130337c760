import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { VerificationView } from '../../src/verify/verification-view.js';
import { seriesValue } from '../support/metrics-text.js';
import {
  replicationService,
  sqlOn,
  startConvergedPipeline,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import type { TestService } from '../support/service.js';

const SCHEMA = `
  CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, amount numeric(12,2), placed_at timestamptz,
    note text, tags text[], paid boolean);
  CREATE TABLE codes (code text PRIMARY KEY, label text);
  INSERT INTO orders SELECT i, 'c' || (i % 97), i * 0.25, '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 min',
    CASE WHEN i % 5 = 0 THEN NULL ELSE E'line\\ttab ''q'' é' END, ARRAY['a', 'b' || i], i % 2 = 0
    FROM generate_series(1, 20000) i;
  INSERT INTO codes SELECT 'k' || i, 'label ' || i FROM generate_series(1, 500) i;
`;

type Verification = VerificationView;

describe('verify and repair through the API', { timeout: 240_000 }, () => {
  const { adminUrl } = inject('pgClusters')[0] as { adminUrl: string };
  let service: TestService;
  let dbs: { source: string; sink: string; store: string };
  const api = (method: string, path: string, body?: unknown) => service.request(method, path, body);

  const ended = async (id: string): Promise<Verification> =>
    (await waitFor(async () => {
      const { body } = await api('GET', `/v1/pipelines/shop/verifications/${id}`);
      return ['completed', 'failed', 'cancelled'].includes(body.status) ? (body as Verification) : undefined;
    }, `verification ${id} to end`)) as Verification;

  const definition = async () => {
    const { body } = await api('GET', '/v1/pipelines/shop');
    return { source: body.source, sink: body.sink };
  };

  const verify = async (body: unknown = {}) => {
    const started = await api('POST', '/v1/pipelines/shop/verify', body);
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    return ended(started.body.id);
  };

  beforeAll(async () => {
    ({ service, dbs } = await replicationService(adminUrl, `vapi_${randomBytes(4).toString('hex')}`, SCHEMA));
    await startConvergedPipeline(service, dbs, 'shop', ['public.orders']);
    await api('PUT', '/v1/pipelines/shop', {
      source: { connection: 'src', tables: ['public.orders', 'public.codes'] },
      sink: { connection: 'dst' },
    });
    await waitConverged(dbs.source, dbs.sink, 'codes', 'code');
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('finds a correct sink equal to its source, table by table', async () => {
    const v = await verify();
    expect(v).toMatchObject({ status: 'completed', result: 'matched', error: null });
    expect(v.tables.map((t) => [t.table, t.status])).toEqual([
      ['public.orders', 'matched'],
      ['public.codes', 'matched'],
    ]);
    expect(v.rows_read).toBeGreaterThanOrEqual(2 * 20_500);
    const list = await api('GET', '/v1/pipelines/shop/verifications');
    expect(list.body.verifications[0].id).toBe(v.id);
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(
      seriesValue(
        metrics,
        'replicator_verification_runs_total{pipeline="shop",status="completed",result="matched"}',
      ),
    ).toBeGreaterThanOrEqual(1);
  });

  it('finds rows changed, deleted and added by hand in the sink by key, and repairs them while the pipeline streams', async () => {
    await sqlOn(
      dbs.sink,
      `UPDATE orders SET amount = amount + 1 WHERE id IN (10, 15000);
      DELETE FROM orders WHERE id = 777; INSERT INTO orders (id, customer) VALUES (99999, 'stray');
      UPDATE codes SET label = NULL WHERE code = 'k42';`,
    );
    const v = await verify();
    expect(v.result).toBe('differs');
    const orders = v.tables.find((t) => t.table === 'public.orders');
    expect(orders).toMatchObject({ status: 'differs', missing: 1, extra: 1, changed: 2 });
    expect(orders?.sample_keys).toContainEqual({ kind: 'extra', key: { id: '99999' } });
    expect(v.tables.find((t) => t.table === 'public.codes')).toMatchObject({ changed: 1 });

    // Writes go on while the repair copies the rows again.
    await sqlOn(
      dbs.source,
      `UPDATE orders SET note = 'after' WHERE id IN (10, 11); INSERT INTO orders (id, customer) VALUES (20001, 'new')`,
    );
    const repaired = await api('POST', `/v1/pipelines/shop/verifications/${v.id}/repair`);
    expect(repaired.status, JSON.stringify(repaired.body)).toBe(202);
    const done = (await waitFor(async () => {
      const { body } = await api('GET', `/v1/pipelines/shop/verifications/${v.id}`);
      return body.repair?.status === 'completed' || body.repair?.status === 'failed'
        ? (body as Verification)
        : undefined;
    }, 'the repair to end')) as Verification;
    expect(done.repair).toMatchObject({ status: 'completed', error: null });
    const audited = (await api('GET', '/v1/audit-events?action=pipeline.repair')).body.events;
    expect(audited[0]).toMatchObject({
      action: 'pipeline.repair',
      target: 'pipeline:shop',
      status: 202,
      outcome: 'success',
    });
    expect(
      (await api('GET', '/v1/audit-events?action=pipeline.verify')).body.events.length,
    ).toBeGreaterThanOrEqual(2);
    const again = await ended(done.repair?.verification_id as string);
    expect(again.result).toBe('matched');
    await waitConverged(dbs.source, dbs.sink, 'orders');
    await waitConverged(dbs.source, dbs.sink, 'codes', 'code');
  });

  it('verifies on a schedule, counted from the last verification', async () => {
    expect(
      (await api('PUT', '/v1/pipelines/shop', { ...(await definition()), verify: { interval: '30s' } })).body,
    ).toMatchObject({
      code: 'VALIDATION_FAILED',
      error: expect.stringContaining('verify.interval'),
    });
    const put = await api('PUT', '/v1/pipelines/shop', {
      ...(await definition()),
      verify: { interval: '6h', source_share: 0.5 },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.verify).toEqual({ interval: '6h', source_share: 0.5 });
    // Verified a moment ago by hand: the schedule waits 6 h from then.
    const before = (await api('GET', '/v1/pipelines/shop/verifications')).body.verifications.length;
    await sqlOn(dbs.store, `UPDATE verifications SET created_at = created_at - interval '7 hours'`);
    const scheduled = (await waitFor(async () => {
      const list = (await api('GET', '/v1/pipelines/shop/verifications')).body
        .verifications as (Verification & { trigger: string; source_share: number })[];
      return list.find((v) => v.trigger === 'schedule');
    }, 'a scheduled verification')) as Verification & { source_share: number };
    expect(scheduled.source_share).toBe(0.5);
    expect((await ended(scheduled.id)).result).toBe('matched');
    expect((await api('GET', '/v1/pipelines/shop/verifications')).body.verifications.length).toBe(before + 1);
    const { verify: _, ...withoutSchedule } = { ...(await definition()), verify: undefined };
    expect((await api('PUT', '/v1/pipelines/shop', withoutSchedule)).body.verify).toEqual({
      interval: null,
      source_share: 1,
    });
  });

  it('answers what cannot be verified with its code', async () => {
    expect((await api('POST', '/v1/pipelines/shop/verify', { tables: ['public.nope'] })).status).toBe(400);
    expect((await api('POST', '/v1/pipelines/shop/verify', { source_share: 0 })).status).toBe(400);
    expect(
      (await api('GET', '/v1/pipelines/shop/verifications/00000000-0000-0000-0000-000000000000')).status,
    ).toBe(404);
    expect((await api('GET', '/v1/pipelines/shop/verifications/not-a-uuid')).status).toBe(404);
    // One at a time: of two asked together, one is refused.
    const [a, b] = await Promise.all([
      api('POST', '/v1/pipelines/shop/verify', {}),
      api('POST', '/v1/pipelines/shop/verify', {}),
    ]);
    expect([a.status, b.status].sort()).toEqual([202, 409]);
    const refused = a.status === 409 ? a : b;
    const accepted = a.status === 202 ? a : b;
    expect(refused.body).toMatchObject({
      code: 'VERIFICATION_RUNNING',
      details: { verifications: [accepted.body.id] },
    });
    const cancelled = await api('POST', `/v1/pipelines/shop/verifications/${accepted.body.id}/cancel`);
    expect([200, 409]).toContain(cancelled.status);
    const end = await ended(accepted.body.id);
    expect(['cancelled', 'completed']).toContain(end.status);
    // A matched verification has nothing to repair.
    const matched = await verify();
    expect((await api('POST', `/v1/pipelines/shop/verifications/${matched.id}/repair`)).body.code).toBe(
      'INVALID_TRANSITION',
    );

    await api('PUT', '/v1/pipelines/shop/state', { state: 'pause' });
    const paused = await api('POST', '/v1/pipelines/shop/verify', {});
    expect(paused.status).toBe(409);
    expect(paused.body.code).toBe('PIPELINE_NOT_RUNNING');
    await api('PUT', '/v1/pipelines/shop/state', { state: 'resume' });
  });
});
