import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCommandLine } from '../../src/cli/run.js';
import { availableBinDirs, createDatabase, type PgCluster, startPgCluster } from '../support/pg-cluster.js';
import {
  createSourceAndSink,
  replicationDatabases,
  slotNameOf,
  sqlOn,
  startConvergedPipeline,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const [cluster] = inject('pgClusters');

const SOURCE_SQL = `CREATE TABLE items (id int PRIMARY KEY, v text);
  INSERT INTO items SELECT g, 'seed ' || g FROM generate_series(1, 200) g;
  CREATE TABLE notes (id int PRIMARY KEY, body text);
  INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 50) g;`;

const TABLES = ['public.items', 'public.notes'];

/** The slots the service owns on the database `url` points at. */
const slotsOf = async (url: string) =>
  sqlOn<{ slot_name: string; active_pid: number | null; wal_status: string }>(
    url,
    `SELECT slot_name, active_pid, wal_status FROM pg_replication_slots
      WHERE database = current_database() AND slot_name LIKE 'replicator\\_%'`,
  );

/** Drops the database's slot as someone else would: its walsender terminated, then the slot dropped. */
async function dropSlotBehindItsBack(url: string): Promise<void> {
  await waitFor(async () => {
    const [slot] = await slotsOf(url);
    if (!slot) return true;
    try {
      await sqlOn(
        url,
        `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots
            WHERE slot_name = $1 AND active_pid IS NOT NULL`,
        [slot.slot_name],
      );
      await sqlOn(url, 'SELECT pg_drop_replication_slot($1)', [slot.slot_name]);
    } catch {
      // Still active: the terminated walsender has not exited yet, try again.
    }
    return (await slotsOf(url)).length === 0;
  }, 'the slot to be dropped');
}

/** Inserts, updates and deletes at the source, while the pipeline has no slot to see them. */
const changeWhileSlotless = (url: string) =>
  sqlOn(
    url,
    `DELETE FROM items WHERE id <= 20;
     UPDATE items SET v = 'changed while slotless' WHERE id BETWEEN 21 AND 30;
     INSERT INTO items SELECT g, 'new ' || g FROM generate_series(1001, 1030) g;
     DELETE FROM notes WHERE id > 40;`,
  );

describe('resync: the way back after a lost or dropped slot', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;

  const pipeline = async (name: string) => (await service.request('GET', `/v1/pipelines/${name}`)).body;
  const waitState = (name: string, state: string, timeoutMs = 120_000) =>
    waitFor(async () => (await pipeline(name)).state === state, `${name} to be ${state}`, timeoutMs);
  const eventsTotal = async (name: string): Promise<number> =>
    (await service.request('GET', `/v1/pipelines/${name}/metrics`)).body.events_total;
  const runs = async (name: string) =>
    (await service.request('GET', `/v1/pipelines/${name}/runs?limit=100`)).body.runs as {
      outcome: string;
      events_total: number;
    }[];

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'resync');
    await sqlOn(dbs.source, SOURCE_SQL);
    service = await startTestService(testConfig(dbs.store));
    await createSourceAndSink(service.request, dbs);
  });
  afterAll(() => service?.stop());

  it('a slot dropped while streaming fails the pipeline with the resync hint; resync brings it back whole', async () => {
    await startConvergedPipeline(service, dbs, 'dropped', TABLES);
    await sqlOn(dbs.source, `INSERT INTO items SELECT g, 'streamed ' || g FROM generate_series(501, 520) g`);
    await waitConverged(dbs.source, dbs.sink, 'items');
    await waitFor(async () => (await eventsTotal('dropped')) >= 20, 'the streamed events to be counted');

    // A running pipeline is not resynced behind its back: it must be stopped first.
    const running = await service.request('POST', '/v1/pipelines/dropped/resync');
    expect(running.status).toBe(409);
    expect(running.body.code).toBe('INVALID_TRANSITION');
    expect(running.body.error).toMatch(/is running: .*stopped or failed; stop it first/);
    const unknown = await service.request('POST', '/v1/pipelines/no-such-pipeline/resync');
    expect(unknown.status).toBe(404);

    await dropSlotBehindItsBack(dbs.source);
    await changeWhileSlotless(dbs.source);
    await waitState('dropped', 'failed');
    const failed = await pipeline('dropped');
    expect(failed.error).toMatch(
      /replication slot 'replicator_(?:s_[0-9a-f]{24}|[0-9a-f]{32})' (does not exist|was dropped)/,
    );
    expect(failed.error).toContain('run `replicator resync dropped` or POST /v1/pipelines/dropped/resync');
    // Never recreated silently: not by the failure, nor by a start, which fails the same way.
    expect(await slotsOf(dbs.source)).toEqual([]);
    expect((await service.request('PUT', '/v1/pipelines/dropped/state', { state: 'start' })).status).toBe(
      200,
    );
    await waitState('dropped', 'failed');
    expect((await pipeline('dropped')).error).toContain('replicator resync dropped');
    expect(await slotsOf(dbs.source)).toEqual([]);

    const eventsBefore = await eventsTotal('dropped');
    const runsBefore = await runs('dropped');
    const accepted = await service.request('POST', '/v1/pipelines/dropped/resync');
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    expect(accepted.body).toEqual({ name: 'dropped', tables: TABLES, state: 'starting' });

    // Every table copied again: rows deleted at the source while the slot was gone are gone from the sink.
    await waitConverged(dbs.source, dbs.sink, 'items');
    await waitConverged(dbs.source, dbs.sink, 'notes');
    await waitState('dropped', 'running');
    const [slot] = await slotsOf(dbs.source);
    expect(slot?.slot_name).toMatch(/^replicator_/);
    const progress = (await service.request('GET', '/v1/pipelines/dropped/progress')).body;
    expect(progress.tables.map((t: { status: string }) => t.status)).toEqual(['streaming', 'streaming']);

    // And it streams from the new slot.
    await sqlOn(
      dbs.source,
      `INSERT INTO items VALUES (2001, 'after the resync'); DELETE FROM items WHERE id = 25`,
    );
    await waitConverged(dbs.source, dbs.sink, 'items');

    // Its history and counters are kept, the resync recorded in both.
    expect(await eventsTotal('dropped')).toBeGreaterThanOrEqual(eventsBefore);
    const runsAfter = await runs('dropped');
    expect(runsAfter.slice(-runsBefore.length)).toEqual(runsBefore);
    expect(runsAfter.map((r) => r.outcome)).toContain('resync');
    const audit = await sqlOn(
      dbs.store,
      `SELECT action, target, outcome FROM audit_events WHERE action = 'pipeline.resync' ORDER BY id`,
    );
    expect(audit).toContainEqual({
      action: 'pipeline.resync',
      target: 'pipeline:dropped',
      outcome: 'success',
    });
    expect(audit).toContainEqual({
      action: 'pipeline.resync',
      target: 'pipeline:dropped',
      outcome: 'failure',
    });
  }, 300_000);

  it('a slot dropped while the sink is down fails the pipeline with the slot error, not the sink error', async () => {
    const proxy = await TcpProxy.start('127.0.0.1', Number(new URL(dbs.sink).port));
    try {
      const sinkUrl = new URL(dbs.sink);
      sinkUrl.port = String(proxy.listenPort);
      const created = await service.request('POST', '/v1/connections', {
        name: 'dst-proxied',
        type: 'postgres',
        dsn: sinkUrl.toString(),
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const made = await service.request('POST', '/v1/pipelines', {
        name: 'sink-down',
        source: { connection: 'src', tables: ['public.notes'] },
        sink: { connection: 'dst-proxied', properties: { 'table.public.notes': 'notes_sink_down' } },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      expect((await service.request('PUT', '/v1/pipelines/sink-down/state', { state: 'start' })).status).toBe(
        200,
      );
      await waitFor(
        async () =>
          (await service.request('GET', '/v1/pipelines/sink-down/progress')).body.phase === 'streaming',
        'sink-down to stream',
      );

      await proxy.down();
      await sqlOn(dbs.source, `INSERT INTO notes VALUES (5001, 'while the sink is down')`);
      await waitFor(
        async () =>
          (await service.request('GET', '/v1/pipelines/sink-down/metrics')).body.sink_errors_total > 0,
        'a failed sink write counted',
      );
      expect((await pipeline('sink-down')).state).toBe('running');
      const slotName = await slotNameOf(dbs.store, await pipeline('sink-down'));
      await waitFor(async () => {
        await sqlOn(
          dbs.source,
          `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NOT NULL`,
          [slotName],
        );
        await sqlOn(dbs.source, 'SELECT pg_drop_replication_slot($1)', [slotName]).catch(() => undefined);
        return (await slotsOf(dbs.source)).every((s) => s.slot_name !== slotName);
      }, 'the slot to be dropped');

      // The sink is still down: the slot's error shows, and retrying stops (nothing but a resync helps).
      await waitState('sink-down', 'failed', 180_000);
      expect((await pipeline('sink-down')).error).toContain(
        `replication slot '${slotName}' does not exist any more; the pipeline needs a resync`,
      );
      expect((await slotsOf(dbs.source)).some((s) => s.slot_name === slotName)).toBe(false);

      await proxy.up();
      expect((await service.request('POST', '/v1/pipelines/sink-down/resync')).status).toBe(202);
      await waitFor(async () => {
        const [source, sink] = await Promise.all([
          sqlOn(dbs.source, 'SELECT count(*)::int AS n FROM notes'),
          sqlOn(dbs.sink, 'SELECT count(*)::int AS n FROM notes_sink_down').catch(() => [{ n: -1 }]),
        ]);
        return source[0]?.n === sink[0]?.n;
      }, 'sink-down to be copied again');
      await waitState('sink-down', 'running');
    } finally {
      await service.request('PUT', '/v1/pipelines/sink-down/state', { state: 'stop' });
      await proxy.stop();
    }
  }, 300_000);

  it('replicator resync NAME --wait resyncs a stopped pipeline and returns once it is copied', async () => {
    expect((await service.request('PUT', '/v1/pipelines/dropped/state', { state: 'stop' })).status).toBe(200);
    await waitState('dropped', 'stopped');
    await sqlOn(dbs.sink, 'INSERT INTO notes VALUES (9999, $1)', ['a row only the sink has']);
    let stdout = '';
    let stderr = '';
    const code = await runCommandLine(['resync', 'dropped', '--wait', '--url', service.url], {
      out: (text: string) => {
        stdout += text;
      },
      err: (text: string) => {
        stderr += text;
      },
      env: {},
      tty: false,
    });
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('pipeline dropped: starting, copying public.items, public.notes again');
    expect(stdout).toContain('pipeline dropped: running, 2 of 2 tables copied');
    expect((await pipeline('dropped')).state).toBe('running');
    // The copy replaced the sink's table: what only the sink had is gone.
    await waitConverged(dbs.source, dbs.sink, 'notes');

    // A resync of a running pipeline is refused, and so the CLI exits with the API's message.
    let refused = '';
    const again = await runCommandLine(['resync', 'dropped', '--url', service.url], {
      out: () => undefined,
      err: (text: string) => {
        refused += text;
      },
      env: {},
      tty: false,
    });
    expect(again).toBe(1);
    expect(refused).toContain('stop it first');
  }, 300_000);
});

/**
 * A slot the source invalidated (max_slot_wal_keep_size) while the pipeline was paused: resuming
 * fails, naming the slot lost, and a resync brings it back. On a source cluster of its own, with
 * the tiniest WAL budget for slots.
 */
describe('resync after the source invalidated the slot', () => {
  let source: PgCluster;
  let service: TestService;
  let dbs: { store: string; source: string; sink: string };

  beforeAll(async () => {
    const binaries = availableBinDirs()[0] as { binDir: string };
    source = await startPgCluster('slot-keep', binaries.binDir, [
      'max_slot_wal_keep_size=1MB',
      'max_wal_size=32MB',
      'min_wal_size=32MB',
    ]);
    const shared = await replicationDatabases(cluster?.adminUrl as string, 'resync_lost');
    dbs = {
      store: shared.store,
      sink: shared.sink,
      source: await createDatabase(source.adminUrl, 'resync_lost_src'),
    };
    await sqlOn(dbs.source, SOURCE_SQL);
    service = await startTestService(testConfig(dbs.store));
    await createSourceAndSink(service.request, dbs);
  });
  afterAll(async () => {
    await service?.stop();
    await source?.stop();
  });

  it('fails naming the slot invalidated, and a resync copies every table from a new slot', async () => {
    await startConvergedPipeline(service, dbs, 'lost', TABLES);
    const pause = await service.request('PUT', '/v1/pipelines/lost/state', { state: 'pause' });
    expect(pause.status, JSON.stringify(pause.body)).toBe(200);
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/lost')).body.state === 'paused',
      'paused',
    );
    await waitFor(async () => (await slotsOf(dbs.source))[0]?.active_pid === null, 'the slot to be let go');

    await changeWhileSlotless(dbs.source);
    // WAL past the slot's budget, then checkpoints, until the source gives the slot up.
    await waitFor(async () => {
      await sqlOn(
        dbs.source,
        `CREATE TABLE IF NOT EXISTS ballast (id serial PRIMARY KEY, pad text);
           INSERT INTO ballast (pad) SELECT repeat('x', 500) FROM generate_series(1, 20000);
           TRUNCATE ballast;
           SELECT pg_switch_wal();
           CHECKPOINT;`,
      );
      return (await slotsOf(dbs.source))[0]?.wal_status === 'lost';
    }, 'the slot to be invalidated');

    expect((await service.request('PUT', '/v1/pipelines/lost/state', { state: 'resume' })).status).toBe(200);
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/lost')).body.state === 'failed',
      'failed',
    );
    const error = (await service.request('GET', '/v1/pipelines/lost')).body.error as string;
    expect(error).toMatch(/replication slot 'replicator_(?:s_[0-9a-f]{24}|[0-9a-f]{32})' was invalidated/);
    expect(error).toContain('run `replicator resync lost` or POST /v1/pipelines/lost/resync');

    const accepted = await service.request('POST', '/v1/pipelines/lost/resync');
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    await waitConverged(dbs.source, dbs.sink, 'items');
    await waitConverged(dbs.source, dbs.sink, 'notes');
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/lost')).body.state === 'running',
      'running',
    );
    const slots = await slotsOf(dbs.source);
    expect(slots).toHaveLength(1);
    expect(slots[0]?.wal_status).not.toBe('lost');
    await service.request('PUT', '/v1/pipelines/lost/state', { state: 'stop' });
  }, 300_000);
});

/**
 * Two instances on one metadata store: a resync asked of the instance that does not run the
 * pipeline is carried out by the one that does (its lease, its queue), through the store.
 */
describe('resync in a fleet', () => {
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let owner: TestService;
  let other: TestService;

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'resync_fleet');
    await sqlOn(dbs.source, SOURCE_SQL);
    const keyFile = join(mkdtempSync(join(tmpdir(), 'resync-fleet-')), 'master.key');
    writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
    const config = () => {
      const c = testConfig(dbs.store);
      return { ...c, auth: { ...c.auth, masterKeyFile: keyFile } };
    };
    owner = await startTestService(config());
    other = await startTestService(config());
    await createSourceAndSink(owner.request, dbs);
  });
  afterAll(async () => {
    await other?.stop();
    await owner?.stop();
  });

  it("is carried out by the pipeline's owner when asked of another instance", async () => {
    await startConvergedPipeline(owner, dbs, 'fleet', TABLES);
    await dropSlotBehindItsBack(dbs.source);
    await changeWhileSlotless(dbs.source);
    await waitFor(
      async () => (await other.request('GET', '/v1/pipelines/fleet')).body.state === 'failed',
      'fleet to fail',
    );

    const ownerOf = async () =>
      (await sqlOn(dbs.store, "SELECT owner_worker_id FROM pipelines WHERE name = 'fleet'"))[0]
        ?.owner_worker_id;
    const before = await ownerOf();
    expect(before).toBeTruthy();
    const accepted = await other.request('POST', '/v1/pipelines/fleet/resync');
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    // The state before: the owner carries it out.
    expect(accepted.body.state).toBe('failed');
    await waitConverged(dbs.source, dbs.sink, 'items');
    await waitConverged(dbs.source, dbs.sink, 'notes');
    await waitFor(
      async () => (await owner.request('GET', '/v1/pipelines/fleet')).body.state === 'running',
      'fleet to run on its owner',
    );
    // The same worker runs it, from one new slot.
    expect(await ownerOf()).toBe(before);
    expect(await slotsOf(dbs.source)).toHaveLength(1);
    await owner.request('PUT', '/v1/pipelines/fleet/state', { state: 'stop' });
  }, 300_000);
});
