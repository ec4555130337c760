import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { compareLsn } from '../../src/core/lsn.js';
import { type startCliServer, startFleetInstance, stopChild } from '../support/cli-process.js';
import { localTcpPorts } from '../support/process-sockets.js';
import {
  createSourceAndSink,
  replicationDatabases,
  sqlOn,
  tableDigest,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { jsonRequest } from '../support/service.js';
import { HANG_MS } from '../support/wait-for.js';

// Several service processes on one metadata database; one PostgreSQL version is enough.
const [cluster] = inject('pgClusters');

describe('a fleet of three instances on one metadata database', () => {
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const instances: { base: string; child: Awaited<ReturnType<typeof startCliServer>>['child'] }[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'replicator-fleet-'));
  const keyFile = join(dir, 'master.key');
  const api = (i: number, method: string, path: string, body?: unknown) =>
    jsonRequest(instances[i]?.base as string, method, path, body);
  const pipelineOn = async (i: number, name: string) => (await api(i, 'GET', `/v1/pipelines/${name}`)).body;

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'fleet');
    writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
    for (const t of ['f1', 'f2', 'f3']) {
      await sqlOn(
        dbs.source,
        `CREATE TABLE ${t} (id serial PRIMARY KEY, v integer); INSERT INTO ${t} (v) SELECT g FROM generate_series(1, 100) g`,
      );
    }
    for (let i = 0; i < 3; i++) {
      const { port, server } = await startFleetInstance(dbs.store, join(dir, `i${i}`), keyFile);
      instances.push({ base: `http://127.0.0.1:${port}`, child: server.child });
    }
    await api(0, 'POST', '/v1/connections', { name: 'src', type: 'postgres', dsn: dbs.source });
    await api(1, 'POST', '/v1/connections', { name: 'dst', type: 'postgres', dsn: dbs.sink });
    // Slots of their own: the pipelines of a shared stream run together on one instance
    // (fleet-shared-stream.test.ts), and these are spread.
    for (const [i, t] of ['f1', 'f2', 'f3'].entries()) {
      await api(i, 'POST', '/v1/pipelines', {
        name: t,
        source: { connection: 'src', tables: [`public.${t}`], slot: 'own' },
        sink: { connection: 'dst' },
      });
      // Each instance starts one: a pipeline runs where it was started.
      expect((await api(i, 'PUT', `/v1/pipelines/${t}/state`, { state: 'start' })).status).toBe(200);
    }
  });
  afterAll(async () => {
    for (const instance of instances) await stopChild(instance.child, 'SIGKILL');
  });

  it('spreads the pipelines, one per worker, each seen from every instance', async () => {
    for (const t of ['f1', 'f2', 'f3']) await waitConverged(dbs.source, dbs.sink, t);
    const workers = (await api(2, 'GET', '/v1/workers')).body;
    expect(workers).toHaveLength(3);
    expect(workers.every((w: { status: string }) => w.status === 'live')).toBe(true);
    expect(workers.map((w: { pipelines: string[] }) => w.pipelines.length).sort()).toEqual([1, 1, 1]);
    expect((await api(1, 'GET', '/v1/health')).body).toMatchObject({
      status: 'ok',
      workers: 3,
      pipelines_running: 3,
    });
  });

  it('carries out a state change asked of an instance that does not run the pipeline', async () => {
    expect((await api(0, 'PUT', '/v1/pipelines/f2/state', { state: 'pause' })).status).toBe(200);
    await waitFor(async () => (await pipelineOn(0, 'f2')).state === 'paused', 'f2 paused by its owner');
    await sqlOn(dbs.source, 'INSERT INTO f2 (v) VALUES (-1)');
    // Every instance shows the paused pipeline's lag growing, not only the one running it.
    for (const i of [0, 1, 2]) {
      const behind = await waitFor(async () => {
        const p = await pipelineOn(i, 'f2');
        return p.replication_lag_ms > 1_500 && p.replication_lag_bytes > 0 ? p : undefined;
      }, `f2's lag growing, read from instance ${i}`);
      expect(behind.state).toBe('paused');
      const metrics = (await api(i, 'GET', '/v1/pipelines/f2/metrics')).body;
      expect(metrics.replication_lag_seconds).toBeGreaterThan(1.5);
    }
    expect((await api(2, 'PUT', '/v1/pipelines/f2/state', { state: 'resume' })).status).toBe(200);
    await waitFor(async () => (await pipelineOn(1, 'f2')).state === 'running', 'f2 resumed');
    await waitConverged(dbs.source, dbs.sink, 'f2');
  });

  it('moves the pipelines of a killed worker to a live one, losing and duplicating nothing', async () => {
    const owner = (await api(1, 'GET', '/v1/workers')).body.find((w: { pipelines: string[] }) =>
      w.pipelines.includes('f1'),
    );
    const victim = instances.findIndex((_, i) => i === 0);
    expect(owner).toBeDefined();
    let writing = true;
    const newest = async (url: string) =>
      (await sqlOn<{ id: number | null }>(url, 'SELECT max(id)::int AS id FROM f1'))[0]?.id ?? 0;
    const before = await newest(dbs.source);
    const writer = (async () => {
      while (writing)
        await sqlOn(
          dbs.source,
          'INSERT INTO f1 (v) SELECT g FROM generate_series(1, 5) g; UPDATE f1 SET v = v + 1 WHERE id % 10 = 0',
        );
    })();
    // Killed while it replicates the writes: some of them are in the sink already.
    await waitFor(async () => (await newest(dbs.sink)) > before, 'the first writes in the sink');
    await stopChild(instances[victim]?.child as never, 'SIGKILL');
    const survivor = victim === 0 ? 1 : 0;
    const taken = await waitFor(
      async () => {
        const workers = (await api(survivor, 'GET', '/v1/workers')).body;
        const holder = workers.find((w: { pipelines: string[]; status: string }) =>
          w.pipelines.includes('f1'),
        );
        return holder && holder.id !== owner.id && holder.status === 'live' ? workers : undefined;
      },
      'another worker to take f1',
      30_000,
    );
    expect(taken.find((w: { id: string }) => w.id === owner.id).status).toBe('stale');
    // The new owner replicates writes made after it took over, while they go on.
    const afterTakeover = await newest(dbs.source);
    await waitFor(
      async () => (await newest(dbs.sink)) >= afterTakeover,
      'writes after the takeover in the sink',
    );
    writing = false;
    await writer;
    await waitConverged(dbs.source, dbs.sink, 'f1');
    expect((await pipelineOn(survivor, 'f1')).state).toBe('running');
    expect((await api(survivor, 'GET', '/v1/health')).body.workers).toBe(2);
  });
});

/**
 * Fencing end to end, with real processes: the owner of a pipeline is frozen (SIGSTOP) for longer
 * than its lease while rows keep coming, the other instance takes the pipeline over (a new epoch)
 * and writes to the sink, then the old owner is woken (SIGCONT) with a batch in hand.
 *
 * Why this fails when fencing is broken (checked by removing the epoch check of applyBatch and the
 * `WHERE c.epoch <= EXCLUDED.epoch` of the checkpoint upsert in src/sinks/postgres/postgres-sink.ts):
 * - The woken owner always has committed transactions in hand: the old walsender kept sending into
 *   its socket while it was frozen, and with batch_max_events 30 its first few buffered transactions
 *   make a batch at once, so it writes before it notices the lost lease. The test proves it tried:
 *   that write must show up as a rolled-back transaction in the sink (xact_rollback).
 * - Before waking it, the test waits until the new owner applied every transaction the old one may
 *   hold and the 40 after them. Each writer transaction inserts row n, updates row n-20 and deletes
 *   row n-40, so every row in the stale batch was deleted since: a stale batch that lands brings
 *   rows back (the sink no longer equals the source, and no later change removes them).
 * - A trigger logs every committed write of the sink's checkpoint row, in lock order: a stale
 *   batch that lands appears as a step back to the old epoch and to an older LSN.
 * With both guards removed the test fails on that step back (and, without that check, on the
 * digest: 20 rows brought back); with only one of them removed it passes, as the other still
 * refuses the batch.
 */
describe('fencing: an owner frozen past its lease and woken with a batch in hand', () => {
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const nodes: { base: string; child: ChildProcess; output: () => string }[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'replicator-fence-'));
  const keyFile = join(dir, 'master.key');
  const api = (i: number, method: string, path: string, body?: unknown) =>
    jsonRequest(nodes[i]?.base as string, method, path, body);

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'fence');
    writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
    await sqlOn(
      dbs.source,
      'CREATE TABLE fenced (id bigint PRIMARY KEY, v integer NOT NULL); ' +
        'INSERT INTO fenced SELECT g, 0 FROM generate_series(1, 200) g',
    );
    for (let i = 0; i < 2; i++) {
      const { port, server } = await startFleetInstance(dbs.store, join(dir, `n${i}`), keyFile);
      nodes.push({ base: `http://127.0.0.1:${port}`, child: server.child, output: server.output });
    }
  });
  afterAll(async () => {
    for (const node of nodes) await stopChild(node.child, 'SIGKILL');
  });

  it('refuses every batch of the stale owner: the checkpoint never steps back and the sink equals the source', async () => {
    // --- A pipeline streaming from the source, and an audit of the sink's checkpoint writes.
    await createSourceAndSink((method, path, body) => api(0, method, path, body), dbs);
    const created = await api(0, 'POST', '/v1/pipelines', {
      name: 'fenced',
      source: { connection: 'src', tables: ['public.fenced'], slot: 'own' },
      // Small batches: the woken owner makes one from the first transactions it reads.
      sink: { connection: 'dst', properties: { batch_max_events: '30', batch_max_wait_ms: '1000' } },
    });
    expect(created.status).toBe(201);
    expect((await api(0, 'PUT', '/v1/pipelines/fenced/state', { state: 'start' })).status).toBe(200);
    await waitConverged(dbs.source, dbs.sink, 'fenced', 'id', 30_000);
    await waitFor(
      async () => (await sqlOn(dbs.sink, "SELECT to_regclass('_replicator.checkpoints') AS t"))[0]?.t,
      "the sink's checkpoint table",
      20_000,
    );
    await sqlOn(dbs.sink, AUDIT_CHECKPOINTS_SQL);

    // --- Which instance owns it.
    const holderSeenBy = async (i: number) =>
      ((await api(i, 'GET', '/v1/workers')).body as Worker[]).find((w) => w.pipelines.includes('fenced'));
    const owner = (await waitFor(() => holderSeenBy(1), 'an owner of the pipeline', 10_000)) as Worker;
    const z = nodes.findIndex((n) => n.child.pid === owner.pid);
    expect(z).toBeGreaterThanOrEqual(0);
    const zombie = nodes[z] as (typeof nodes)[number];
    const heir = nodes[1 - z] as (typeof nodes)[number];
    const zombiePid = zombie.child.pid as number;

    // --- Rows keep coming: each transaction inserts row n, updates row n-20 and deletes row n-40.
    const writer = startWriter(dbs.source, 201);
    let frozen = false;
    try {
      const firstEpoch = Number((await storeLease(dbs.store)).lease_epoch);
      await waitFor(
        async () => (await checkpointWrites(dbs.sink)).filter((w) => w.epoch === firstEpoch).length >= 3,
        'a few checkpoints of the first owner',
        20_000,
      );
      writer.check();

      // --- Freeze the owner, outside a sink transaction. An owner frozen inside one holds the
      // checkpoint row's lock, and the new owner then cannot write anything until it wakes (the
      // sink sets no lock or idle-in-transaction timeout): a liveness problem of its own, not the
      // one this test is about.
      let zombiePorts = new Set<number>();
      let attempt = 0;
      while (!frozen) {
        if (++attempt > 20) throw new Error('could not freeze the owner outside a sink transaction');
        const writes = (await checkpointWrites(dbs.sink)).length;
        zombie.child.kill('SIGSTOP');
        frozen = true;
        zombiePorts = localTcpPorts(zombiePid);
        if (await noOpenTransaction(dbs.sink, zombiePorts)) break;
        zombie.child.kill('SIGCONT');
        frozen = false;
        await waitFor(async () => (await checkpointWrites(dbs.sink)).length > writes, 'another checkpoint');
      }
      const [atFreeze] = await sqlOn(
        dbs.sink,
        'SELECT lsn::text AS lsn, epoch::int AS epoch FROM _replicator.checkpoints',
      );
      expect(atFreeze?.epoch).toBe(firstEpoch);
      const [oldSender] = await sqlOn(
        dbs.source,
        `SELECT s.active_pid AS pid, a.client_port AS port FROM pg_replication_slots s
           JOIN pg_stat_activity a ON a.pid = s.active_pid WHERE s.database = current_database()`,
      );
      // The slot is streamed by the frozen process.
      expect(zombiePorts.has(Number(oldSender?.port))).toBe(true);

      // --- The other instance takes it over (new epoch), ends the old walsender and writes.
      const heirWorker = (await waitFor(
        async () => {
          const holder = await holderSeenBy(1 - z);
          return holder && holder.id !== owner.id ? holder : undefined;
        },
        'the other instance to take the pipeline',
        20_000,
      )) as Worker;
      expect(heirWorker.pid).toBe(heir.child.pid);
      await waitFor(
        async () =>
          (await sqlOn(dbs.source, 'SELECT 1 FROM pg_stat_activity WHERE pid = $1', [oldSender?.pid]))
            .length === 0,
        'the old walsender to end',
        20_000,
      );
      // Whatever the old walsender sent came from transactions issued by now.
      const lastSentToZombie = writer.issued();
      const newEpoch = Number((await storeLease(dbs.store)).lease_epoch);
      expect(newEpoch).toBeGreaterThan(firstEpoch);
      // The new owner applies everything the frozen one may hold and 40 transactions more, so
      // that every row of a stale batch has been deleted since.
      await waitFor(
        () => sinkApplied(dbs.sink, lastSentToZombie + 40),
        'the new owner to apply past what the frozen owner holds',
        30_000,
      );
      writer.check();
      const beforeWake = await checkpointWrites(dbs.sink);
      const byNewOwner = beforeWake.filter((w) => w.epoch === newEpoch);
      expect(byNewOwner.length).toBeGreaterThan(0);
      const heirPorts = localTcpPorts(heir.child.pid as number);
      expect(byNewOwner.every((w) => heirPorts.has(w.port))).toBe(true);
      expect(heirPorts.has(await slotStreamerPort(dbs.source))).toBe(true);
      const rollbacksBeforeWake = await sinkRollbacks(dbs.sink);

      // --- Wake the old owner with its batch in hand.
      zombie.child.kill('SIGCONT');
      frozen = false;
      await waitFor(
        async () => zombie.output().includes('lost the lease of the pipeline'),
        'the old owner to notice it lost the lease',
        15_000,
      );
      // Its data plane is over once it closed its sink connections (the runner closes the sink last).
      await waitFor(
        async () => (await backendsOf(dbs.sink, localTcpPorts(zombiePid))).length === 0,
        'the old owner to close its sink connections',
        15_000,
      );
      // Whatever it sent is decided by now: not one of its writes may have committed.
      expect(stepsBack(await checkpointWrites(dbs.sink))).toEqual([]);
      // It did send a batch, and the sink refused it (rolled back): the scenario really happened.
      await waitFor(
        async () => (await sinkRollbacks(dbs.sink)) > rollbacksBeforeWake,
        "the old owner's batch to be rolled back by the sink",
        15_000,
      );
      const zombieWorker = (await waitFor(
        async () =>
          ((await api(1 - z, 'GET', '/v1/workers')).body as Worker[]).find(
            (w) => w.id === owner.id && w.status === 'live' && w.pipelines.length === 0,
          ),
        'the old owner live again, holding nothing',
        15_000,
      )) as Worker;
      expect(zombieWorker.pipelines).toEqual([]);

      // --- The new owner keeps streaming; then the writer stops and the sink catches up.
      const atWake = writer.issued();
      await waitFor(
        () => sinkApplied(dbs.sink, atWake + 40),
        'the new owner to keep streaming after the old one woke',
        30_000,
      );
      const lastId = await writer.stop();
      await waitFor(() => sinkApplied(dbs.sink, lastId), 'the last transaction in the sink', 30_000);

      // --- Nothing of the stale owner landed: the checkpoint row only ever moved forward...
      const writes = await checkpointWrites(dbs.sink);
      expect(stepsBack(writes)).toEqual([]);
      expect(new Set(writes.map((w) => w.epoch))).toEqual(new Set([firstEpoch, newEpoch]));
      const afterWake = writes.slice(beforeWake.length);
      expect(afterWake.length).toBeGreaterThan(0);
      const heirPortsNow = new Set([...heirPorts, ...localTcpPorts(heir.child.pid as number)]);
      expect(afterWake.every((w) => w.epoch === newEpoch && heirPortsNow.has(w.port))).toBe(true);
      expect(compareLsn(writes.at(-1)?.lsn as string, atFreeze?.lsn)).toBeGreaterThan(0);
      // ...and the sink equals the source row for row: nothing brought back, lost or doubled.
      const expected = await tableDigest(dbs.source, 'fenced', 'id');
      expect(await tableDigest(dbs.sink, 'fenced', 'id')).toEqual(expected);
      // 1..160 never deleted, and the last 40 inserted.
      expect(expected.rows).toBe(200);

      // --- Only the new owner streams from the slot; the old one holds no source connection.
      const zombiePortsNow = localTcpPorts(zombiePid);
      const senders = await sqlOn(
        dbs.source,
        'SELECT client_port AS port FROM pg_stat_replication r JOIN pg_replication_slots s ON s.active_pid = r.pid ' +
          'WHERE s.database = current_database()',
      );
      expect(senders).toHaveLength(1);
      expect(heirPortsNow.has(Number(senders[0]?.port))).toBe(true);
      expect(await backendsOf(dbs.source, zombiePortsNow)).toEqual([]);
      expect((await storeLease(dbs.store)).owner_worker_id).toBe(heirWorker.id);
      expect((await api(z, 'GET', '/v1/pipelines/fenced')).body.state).toBe('running');
      // The stale owner does not report the refusal itself when its next tick (which finds the lease
      // lost and stops the pipeline) comes first, which is the usual case: the refusal of its batch
      // then ends an aborted run and is not logged. Hence the rollback count above as the evidence.
      console.info(
        `fencing: epochs ${firstEpoch} -> ${newEpoch}; ${byNewOwner.length} checkpoints by the new owner while the ` +
          `old one was frozen; ${writes.length} checkpoint writes in all; frozen at attempt ${attempt}; ` +
          `stale owner logged the refusal: ` +
          `${zombie.output().includes('owned by a newer worker')}`,
      );
    } catch (error) {
      // What each side was doing, to tell a fencing failure from a stuck take-over.
      console.error(await diagnostics(dbs, nodes).catch((e: unknown) => `no diagnostics: ${e}`));
      throw error;
    } finally {
      if (frozen) zombie.child.kill('SIGCONT');
      await writer.stop().catch(() => undefined);
    }
  }, 90_000);
});

interface Worker {
  id: string;
  pid: number;
  status: string;
  pipelines: string[];
}

/** Logs every committed write of the sink's checkpoint rows, in the order of the row's lock. */
const AUDIT_CHECKPOINTS_SQL = `
  CREATE SCHEMA fence_audit;
  CREATE TABLE fence_audit.checkpoint_writes (
    seq bigserial PRIMARY KEY, epoch bigint NOT NULL, lsn pg_lsn NOT NULL, client_port integer,
    at timestamptz NOT NULL DEFAULT clock_timestamp());
  CREATE FUNCTION fence_audit.record() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO fence_audit.checkpoint_writes (epoch, lsn, client_port) VALUES (NEW.epoch, NEW.lsn, inet_client_port());
    RETURN NULL;
  END $$;
  CREATE TRIGGER record_write AFTER INSERT OR UPDATE ON _replicator.checkpoints
    FOR EACH ROW EXECUTE FUNCTION fence_audit.record();`;

async function checkpointWrites(sink: string) {
  const rows = await sqlOn(
    sink,
    'SELECT epoch::int AS epoch, lsn::text AS lsn, client_port AS port FROM fence_audit.checkpoint_writes ORDER BY seq',
  );
  return rows as { epoch: number; lsn: string; port: number }[];
}

/** The writes that moved the checkpoint back (to an older epoch or LSN), each with the one before. */
function stepsBack(writes: { epoch: number; lsn: string; port: number }[]) {
  return writes.flatMap((w, i) => {
    const prev = writes[i - 1];
    return prev && (w.epoch < prev.epoch || compareLsn(w.lsn, prev.lsn) < 0) ? [{ from: prev, to: w }] : [];
  });
}

/** The backends of a database whose client is one of `ports` (see localTcpPorts). */
function backendsOf(url: string, ports: Set<number>) {
  return sqlOn(
    url,
    'SELECT pid, state, xact_start FROM pg_stat_activity WHERE datname = current_database() ' +
      'AND client_port = ANY($1::int[])',
    [[...ports]],
  );
}

async function storeLease(store: string) {
  const [row] = await sqlOn(
    store,
    "SELECT lease_epoch, owner_worker_id FROM pipelines WHERE name = 'fenced'",
  );
  return row as { lease_epoch: number; owner_worker_id: string };
}

const portsOf = (pid: number) => {
  try {
    return [...localTcpPorts(pid)].join(' ');
  } catch {
    return '(process gone)';
  }
};

async function diagnostics(
  dbs: { source: string; sink: string; store: string },
  nodes: { child: ChildProcess; output: () => string }[],
): Promise<string> {
  const activity =
    'SELECT pid, client_port, backend_type, state, wait_event_type, wait_event, xact_start, left(query, 100) AS query ' +
    'FROM pg_stat_activity WHERE datname = current_database()';
  return [
    `sink: ${JSON.stringify(await sqlOn(dbs.sink, activity))}`,
    `source: ${JSON.stringify(await sqlOn(dbs.source, activity))}`,
    `slot: ${JSON.stringify(await sqlOn(dbs.source, 'SELECT slot_name, active_pid, confirmed_flush_lsn::text FROM pg_replication_slots WHERE database = current_database()'))}`,
    `checkpoint writes (last 10): ${JSON.stringify((await checkpointWrites(dbs.sink).catch(() => [])).slice(-10))}`,
    `lease: ${JSON.stringify(await storeLease(dbs.store))}`,
    ...nodes.map(
      (n) => `node pid ${n.child.pid}, ports ${portsOf(n.child.pid as number)}:\n${n.output().slice(-4000)}`,
    ),
  ].join('\n');
}

/**
 * Whether the sink has writer transaction `n` (and so every one before it: a pipeline applies
 * transactions in commit order). Row n itself is deleted 40 transactions later, hence max(id).
 */
async function sinkApplied(sink: string, n: number): Promise<boolean> {
  const [row] = await sqlOn(sink, 'SELECT coalesce(max(id), 0)::bigint >= $1 AS done FROM fenced', [n]);
  return row?.done === true;
}

/** Rolled-back transactions of the sink database, as the statistics have them. */
async function sinkRollbacks(sink: string): Promise<number> {
  const [row] = await sqlOn(
    sink,
    'SELECT xact_rollback::int AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(row?.n);
}

async function slotStreamerPort(source: string): Promise<number> {
  const [row] = await sqlOn(
    source,
    `SELECT a.client_port AS port FROM pg_replication_slots s JOIN pg_stat_activity a ON a.pid = s.active_pid
       WHERE s.database = current_database()`,
  );
  return Number(row?.port);
}

/**
 * Whether the (frozen) process has no transaction open on the sink. A statement sent just before
 * the freeze (a COMMIT) still finishes on the server, so this waits for that (as long as a hang).
 */
async function noOpenTransaction(sink: string, ports: Set<number>): Promise<boolean> {
  const deadline = Date.now() + HANG_MS;
  for (;;) {
    const open = (await backendsOf(sink, ports)).filter((b) => b.xact_start !== null);
    if (open.length === 0) return true;
    // Idle in a transaction: only the frozen client could end it.
    if (open.some((b) => b.state !== 'active') || Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Writes into `fenced` on its own connection until stopped (at most 60 s): transaction n inserts
 * row n, updates row n-20 and deletes row n-40, so each row changes a bounded number of times.
 */
function startWriter(source: string, first: number) {
  const client = new pg.Client({ connectionString: source });
  let writing = true;
  let issued = first - 1;
  let failure: unknown;
  const deadline = Date.now() + 60_000;
  const done = (async () => {
    await client.connect();
    try {
      while (writing && Date.now() < deadline) {
        const n = issued + 1;
        issued = n;
        await client.query(
          `INSERT INTO fenced (id, v) VALUES (${n}, 0); UPDATE fenced SET v = v + 1 WHERE id = ${n - 20}; ` +
            `DELETE FROM fenced WHERE id = ${n - 40}`,
        );
        // A steady stream (~100 transactions a second) that a pipeline keeps up with on two cores:
        // an owner that lags is always inside a sink transaction and cannot be frozen outside one.
        await new Promise((r) => setTimeout(r, 8));
      }
    } finally {
      await client.end();
    }
  })().catch((error: unknown) => {
    failure = error;
  });
  return {
    /** The id of the latest transaction sent (committed, or about to be). */
    issued: () => issued,
    check: () => {
      if (failure) throw failure;
      if (!writing || Date.now() >= deadline) throw new Error('the writer stopped early');
    },
    /** Stops writing; resolves with the id of the last committed transaction. */
    stop: async () => {
      writing = false;
      await done;
      if (failure) throw failure;
      return issued;
    },
  };
}
