import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createSourceAndSink,
  replicationDatabases,
  sqlOn,
  tableDigest,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const SCHEMA = `
  CREATE SCHEMA app;
  CREATE TABLE public.orders (
    id bigserial PRIMARY KEY, amount numeric(12,2), placed_at timestamptz, meta jsonb, tags text[],
    blob bytea, note text, qty integer NOT NULL DEFAULT 0);
  CREATE TABLE public.items (sku text PRIMARY KEY, price double precision, created date, active boolean);
  CREATE TABLE app.events (tenant integer, seq bigint, payload jsonb, at timestamp, PRIMARY KEY (tenant, seq));
`;

const SEED = `
  INSERT INTO public.orders (amount, placed_at, meta, tags, blob, note, qty)
    SELECT (i * 1.25)::numeric(12,2), '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 minute',
      jsonb_build_object('i', i, 'nested', jsonb_build_array(i, 'x')), ARRAY['a' || i, NULL, 'quote"d'],
      decode(md5(i::text), 'hex'), CASE WHEN i % 100 = 0 THEN repeat('long text ', 1200) WHEN i % 7 = 0 THEN NULL
      ELSE E'tab\\there\\nnewline \\\\ back' END, i
    FROM generate_series(1, 20000) AS i;
  INSERT INTO public.items SELECT 'sku-' || i, i / 3.0, DATE '2020-01-01' + i, i % 2 = 0 FROM generate_series(1, 3000) AS i;
  INSERT INTO app.events SELECT i % 10, i, jsonb_build_object('k', i), '2024-05-05 12:00'::timestamp + i * interval '1 s'
    FROM generate_series(1, 5000) AS i;
`;

const WORKLOAD = (round: number) => `
  BEGIN;
  UPDATE public.orders SET qty = qty + 1, meta = meta || '{"round": ${round}}' WHERE id % 97 = ${round % 97};
  UPDATE public.orders SET amount = amount + 1 WHERE id % 100 = 0 AND id % 300 = ${(round * 100) % 300};
  DELETE FROM public.orders WHERE id % 1000 = ${round % 1000};
  INSERT INTO public.orders (amount, placed_at, note) SELECT ${round}.5, now(), 'round ${round}' FROM generate_series(1, 20);
  UPDATE public.items SET price = price * 2, active = NOT active WHERE sku = 'sku-${round + 1}';
  DELETE FROM app.events WHERE tenant = ${round % 10} AND seq % 50 = ${round % 50};
  INSERT INTO app.events VALUES (${round % 10}, ${100000 + round}, NULL, NULL);
  COMMIT;
`;

const TABLES = [
  ['public.orders', 'id'],
  ['public.items', 'sku'],
  ['app.events', 'tenant, seq'],
] as const;

async function expectConverged(source: string, sink: string, only?: string[]) {
  for (const [table, order] of TABLES.filter(([t]) => !only || only.includes(t))) {
    await waitConverged(source, sink, table, order, 60_000);
  }
}

describe.each(inject('pgClusters'))('replication end to end on $label', (cluster) => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster.adminUrl, 'e2e');
    await sqlOn(dbs.source, SCHEMA);
    await sqlOn(dbs.source, SEED);
    await sqlOn(dbs.source, 'ANALYZE');
    // The position heartbeat an hour away: whatever the source confirms here, the stream's own
    // acknowledgements confirmed it.
    service = await startTestService({ ...testConfig(dbs.store), sourceStatusIntervalMs: 3_600_000 });
    await createSourceAndSink(service.request, dbs);
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'e2e',
      source: { connection: 'src', tables: TABLES.map(([t]) => t) },
      sink: { connection: 'dst', properties: { batch_max_events: '500' } },
    });
    expect(created.status).toBe(201);
  });
  afterAll(() => service?.stop());

  it('snapshots, then streams every change, the sink equal to the source row for row', async () => {
    const started = await service.request('PUT', '/v1/pipelines/e2e/state', { state: 'start' });
    expect(started.status).toBe(200);
    expect(['starting', 'running']).toContain(started.body.state);
    // Writes while the snapshot runs, then while streaming.
    for (let round = 0; round < 30; round++) await sqlOn(dbs.source, WORKLOAD(round));
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/e2e/progress')).body.phase === 'streaming',
      'streaming',
    );
    for (let round = 30; round < 60; round++) await sqlOn(dbs.source, WORKLOAD(round));
    // An update that leaves the long (TOASTed) text unchanged must keep it in the sink.
    await sqlOn(dbs.source, 'UPDATE public.orders SET qty = -1 WHERE id % 100 = 0');
    await sqlOn(dbs.source, 'TRUNCATE app.events');
    await sqlOn(dbs.source, "INSERT INTO app.events VALUES (1, 1, '[]', NULL)");
    await expectConverged(dbs.source, dbs.sink);

    const progress = (await service.request('GET', '/v1/pipelines/e2e/progress')).body;
    expect(progress.tables).toHaveLength(3);
    for (const table of progress.tables) {
      expect(table).toMatchObject({ status: 'streaming', percent: 100 });
      expect(table.partitions_done).toBe(table.partitions_total);
    }
    const metrics = (await service.request('GET', '/v1/pipelines/e2e/metrics')).body;
    expect(metrics).toMatchObject({ name: 'e2e', state: 'running', sink_errors_total: 0 });
    expect(metrics.events_total).toBeGreaterThan(0);
    expect(metrics.last_checkpoint_at).toMatch(/Z$/);
    const list = (await service.request('GET', '/v1/pipelines')).body;
    expect(list.find((p: { name: string }) => p.name === 'e2e').state).toBe('running');
  });

  it('keeps the slot lag near zero while nothing it replicates happens: the idle position is acknowledged at once', async () => {
    await sqlOn(dbs.source, 'CREATE TABLE IF NOT EXISTS public.unreplicated (id int)');
    for (let round = 0; round < 3; round++) {
      // WAL the pipeline has no change for: the slot must still follow it, not pin it.
      await sqlOn(dbs.source, 'INSERT INTO public.unreplicated SELECT generate_series(1, 100)');
      const [current] = await sqlOn<{ lsn: string }>(dbs.source, 'SELECT pg_current_wal_lsn()::text AS lsn');
      const lsn = current?.lsn;
      await waitFor(async () => {
        const [slot] = await sqlOn<{ behind: string }>(
          dbs.source,
          `SELECT pg_wal_lsn_diff($1::pg_lsn, confirmed_flush_lsn)::text AS behind
               FROM pg_replication_slots WHERE database = current_database()`,
          [lsn],
        );
        return Number(slot?.behind) <= 0;
      }, 'the slot to confirm the idle position');
    }
  });

  it('answers 409 for a transition the state does not allow, and 400 for an unknown action', async () => {
    const resume = await service.request('PUT', '/v1/pipelines/e2e/state', { state: 'resume' });
    expect(resume).toMatchObject({ status: 409, body: { code: 'INVALID_TRANSITION' } });
    expect(resume.body.error).toContain("pipeline 'e2e' is running: cannot resume");
    const start = await service.request('PUT', '/v1/pipelines/e2e/state', { state: 'start' });
    expect(start).toMatchObject({ status: 409, body: { code: 'INVALID_TRANSITION' } });
    const bogus = await service.request('PUT', '/v1/pipelines/e2e/state', { state: 'explode' });
    expect(bogus).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    const missing = await service.request('PUT', '/v1/pipelines/nope/state', { state: 'start' });
    expect(missing).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
  });

  it('pauses holding the slot position, and catches up on resume', async () => {
    const paused = await service.request('PUT', '/v1/pipelines/e2e/state', { state: 'pause' });
    expect(paused).toMatchObject({ status: 200, body: { state: 'paused' } });
    const slot = async () =>
      (
        await sqlOn<{ lsn: string; active: boolean }>(
          dbs.source,
          "SELECT confirmed_flush_lsn::text AS lsn, active FROM pg_replication_slots WHERE slot_name LIKE 'replicator_%' AND database = current_database()",
        )
      )[0];
    // Paused, the data plane lets go of the slot: nothing reads it, so nothing can move it on.
    await waitFor(async () => (await slot())?.active === false, 'the paused pipeline to release its slot');
    const before = await slot();
    for (let round = 60; round < 70; round++) await sqlOn(dbs.source, WORKLOAD(round));
    expect(await slot()).toEqual(before);
    expect(await tableDigest(dbs.sink, 'public.orders', 'id')).not.toEqual(
      await tableDigest(dbs.source, 'public.orders', 'id'),
    );
    expect((await service.request('PUT', '/v1/pipelines/e2e/state', { state: 'pause' })).status).toBe(409);
    const resumed = await service.request('PUT', '/v1/pipelines/e2e/state', { state: 'resume' });
    expect(resumed).toMatchObject({ status: 200, body: { state: 'running' } });
    await expectConverged(dbs.source, dbs.sink);
  });

  it('stops through stopping, and starts again from the checkpoint without a new snapshot', async () => {
    const stopped = await service.request('PUT', '/v1/pipelines/e2e/state', { state: 'stop' });
    expect(stopped.status).toBe(200);
    expect(['stopping', 'stopped']).toContain(stopped.body.state);
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/e2e')).body.state === 'stopped',
      'stopped',
    );
    // Mark the sink so that a new snapshot (which empties the targets first) would be noticed.
    await sqlOn(dbs.sink, "INSERT INTO public.items VALUES ('sink-only', 0, NULL, NULL)");
    for (let round = 70; round < 80; round++) await sqlOn(dbs.source, WORKLOAD(round));
    expect((await service.request('PUT', '/v1/pipelines/e2e/state', { state: 'start' })).status).toBe(200);
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/e2e/progress')).body.phase === 'streaming',
      'streaming',
    );
    await expectConverged(dbs.source, dbs.sink, ['public.orders', 'app.events']);
    // Still there: the targets were not emptied for a new snapshot.
    expect(await sqlOn(dbs.sink, "SELECT 1 FROM public.items WHERE sku = 'sink-only'")).toHaveLength(1);
    await sqlOn(dbs.sink, "DELETE FROM public.items WHERE sku = 'sink-only'");
    await expectConverged(dbs.source, dbs.sink);
    const runs = (await service.request('GET', '/v1/pipelines/e2e/runs')).body;
    expect(runs.runs.length).toBeGreaterThanOrEqual(2);
    expect(runs.runs[0].outcome).toBe('running');
    expect(runs.runs[1]).toMatchObject({ outcome: 'stopped' });
    expect(runs.runs[1].events_total).toBeGreaterThan(0);
    expect(runs.runs[1].duration_ms).toBeGreaterThan(0);
    const { project_id } = (await service.request('GET', '/v1/pipelines/e2e')).body;
    expect(project_id).toMatch(/^[0-9a-f-]{36}$/);
    for (const run of runs.runs) expect(run.project_id).toBe(project_id);
  });

  it('deletes a running pipeline, dropping its slot and publication', async () => {
    const res = await fetch(`${service.url}/v1/pipelines/e2e`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(204);
    expect(
      await sqlOn(
        dbs.source,
        "SELECT 1 FROM pg_replication_slots WHERE slot_name LIKE 'replicator_%' AND database = current_database()",
      ),
    ).toHaveLength(0);
    expect(
      await sqlOn(dbs.source, "SELECT 1 FROM pg_publication WHERE pubname LIKE 'replicator_%'"),
    ).toHaveLength(0);
  });
});
