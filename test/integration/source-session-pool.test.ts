import { createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Source } from '../../src/core/source.js';
import { createPostgresSource } from '../../src/source/postgres/postgres-source.js';
import {
  acquireSessionLease,
  SOURCE_SESSIONS_PER_CONNECTION,
} from '../../src/source/postgres/session-pool.js';
import { createDatabase, freePort } from '../support/pg-cluster.js';
import { waitFor } from '../support/wait-for.js';

const [cluster] = inject('pgClusters');

const DATABASE = 'source_pool_main';
const OTHER_DATABASE = 'source_pool_other';
const OTHER_USER = 'source_pool_reader';

/** The ordinary sessions the service holds on a database, by user. */
async function sessions(admin: pg.Client, database: string, user = 'postgres'): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE application_name = 'replicator' AND datname = $1 AND usename = $2`,
    [database, user],
  );
  return rows[0]?.n ?? 0;
}

/** The most sessions seen on `database` while `work` ran, read again and again on `admin`. */
async function peakSessionsDuring(admin: pg.Client, database: string, work: Promise<unknown>) {
  let running = true;
  let peak = 0;
  let samples = 0;
  const sampler = (async () => {
    while (running) {
      peak = Math.max(peak, await sessions(admin, database));
      samples++;
    }
  })();
  try {
    await work;
  } finally {
    running = false;
    await sampler;
  }
  return { peak, samples };
}

const openSources = (url: string, count: number): Source[] =>
  Array.from({ length: count }, () => createPostgresSource({ connectionString: url }));

const closeAll = (sources: readonly Source[]) => Promise.all(sources.map((s) => s.close()));

// Every pipeline's runner, the lag probe and each check make a source of their own: those of one
// database share a few sessions, however many there are.
describe('the sessions of the sources of one database', () => {
  let url: string;
  let otherUrl: string;
  let admin: pg.Client;
  // Anything that reached the process unhandled: an 'error' event of a session nobody listened to.
  const unhandled: unknown[] = [];
  const collect = (error: unknown) => unhandled.push(error);

  beforeAll(async () => {
    const adminUrl = cluster?.adminUrl as string;
    [url, otherUrl] = await Promise.all([
      createDatabase(adminUrl, DATABASE),
      createDatabase(adminUrl, OTHER_DATABASE),
    ]);
    admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP ROLE IF EXISTS ${OTHER_USER}; CREATE ROLE ${OTHER_USER} LOGIN`);
    process.on('uncaughtException', collect);
    process.on('unhandledRejection', collect);
  });
  afterAll(async () => {
    process.off('uncaughtException', collect);
    process.off('unhandledRejection', collect);
    await admin?.end();
  });

  it('are at most a pool of them for 20 sources reading at once, and every call answers', async () => {
    const sources = openSources(url, 20);
    try {
      const calls = (async () => {
        await Promise.all(sources.map((s) => s.connect()));
        return Promise.all(
          sources.map(async (source) => {
            const answers = [];
            for (let round = 0; round < 5; round++) {
              answers.push(await Promise.all([source.walPosition(), source.listTables()]));
            }
            return answers;
          }),
        );
      })();
      const { peak, samples } = await peakSessionsDuring(admin, DATABASE, calls);
      const answers = (await calls).flat();
      expect(answers).toHaveLength(100);
      for (const [position, tables] of answers) {
        expect(position).toBeGreaterThan(0n);
        expect(tables).toEqual([]);
      }
      expect(samples).toBeGreaterThan(0);
      expect(peak).toBeGreaterThan(0);
      expect(peak).toBeLessThanOrEqual(SOURCE_SESSIONS_PER_CONNECTION);
    } finally {
      await closeAll(sources);
    }
    await waitFor(async () => (await sessions(admin, DATABASE)) === 0, 'the sessions to be closed');
  });

  it('are a pool apart from those of another database and of another user', async () => {
    const otherUserUrl = new URL(url);
    otherUserUrl.username = OTHER_USER;
    const groups = [
      { sources: openSources(url, 5), database: DATABASE, user: 'postgres' },
      { sources: openSources(otherUrl, 5), database: OTHER_DATABASE, user: 'postgres' },
      { sources: openSources(otherUserUrl.toString(), 5), database: DATABASE, user: OTHER_USER },
    ];
    const all = groups.flatMap((g) => g.sources);
    try {
      await Promise.all(all.map((s) => s.connect()));
      await Promise.all(all.map((s) => Promise.all([s.walPosition(), s.listTables()])));
      for (const { database, user } of groups) {
        const held = await sessions(admin, database, user);
        expect(held, `${user} on ${database}`).toBeGreaterThan(0);
        expect(held, `${user} on ${database}`).toBeLessThanOrEqual(SOURCE_SESSIONS_PER_CONNECTION);
      }
    } finally {
      await closeAll(all);
    }
    await waitFor(
      async () =>
        (await sessions(admin, DATABASE)) +
          (await sessions(admin, OTHER_DATABASE)) +
          (await sessions(admin, DATABASE, OTHER_USER)) ===
        0,
      'the sessions to be closed',
    );
  });

  it('fail only the call under way when the server ends them, and the next call opens a new one', async () => {
    const sources = openSources(url, 3);
    const lease = await acquireSessionLease({ connectionString: url });
    try {
      await Promise.all(sources.map((s) => s.connect()));
      // A call under way on one pooled session while the other is idle: both are ended.
      const underWay = lease.run((client) => client.query('SELECT pg_sleep(60)'));
      underWay.catch(() => undefined);
      await waitFor(
        async () =>
          (
            await admin.query(
              "SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND query = 'SELECT pg_sleep(60)' AND state = 'active'",
              [DATABASE],
            )
          ).rowCount,
        'the call to be under way',
      );
      const { rows: ended } = await admin.query<{ pid: number }>(
        // In the select list, so that only the rows the filter kept are ended.
        `SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE application_name = 'replicator' AND datname = $1`,
        [DATABASE],
      );
      expect(ended.length).toBeGreaterThan(0);
      await expect(underWay).rejects.toThrow();
      await waitFor(
        async () =>
          (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = ANY($1)', [ended.map((r) => r.pid)]))
            .rowCount === 0,
        'the ended sessions to be gone',
      );
      // The server said so on each session before it went: one turn of the event loop reads it.
      await new Promise((resolve) => setImmediate(resolve));
      for (const source of sources) expect(await source.walPosition()).toBeGreaterThan(0n);
      expect((await lease.run((client) => client.query('SELECT 1 AS one'))).rows).toEqual([{ one: 1 }]);
      expect(await sessions(admin, DATABASE)).toBeLessThanOrEqual(SOURCE_SESSIONS_PER_CONNECTION);
      expect(unhandled).toEqual([]);
    } finally {
      await closeAll(sources);
      await lease.release();
    }
    await waitFor(async () => (await sessions(admin, DATABASE)) === 0, 'the sessions to be closed');
  });

  it('of a source closed are cut off from its work under way, not from that of the others', async () => {
    const [closing, staying] = openSources(url, 2) as [Source, Source];
    const lease = await acquireSessionLease({ connectionString: url });
    try {
      await Promise.all([closing.connect(), staying.connect()]);
      const underWay = lease.run((client) => client.query('SELECT pg_sleep(60)'));
      underWay.catch(() => undefined);
      await waitFor(
        async () =>
          (
            await admin.query(
              "SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND query = 'SELECT pg_sleep(60)' AND state = 'active'",
              [DATABASE],
            )
          ).rowCount,
        'the call to be under way',
      );
      await lease.release();
      await expect(underWay).rejects.toThrow();
      await expect(lease.run((client) => client.query('SELECT 1'))).rejects.toThrow(/not connected/);
      await closing.close();
      await closing.close();
      await expect(closing.walPosition()).rejects.toThrow(/not connected/);
      expect(await staying.walPosition()).toBeGreaterThan(0n);
    } finally {
      await closeAll([closing, staying]);
      await lease.release();
    }
    // The server notices a client gone only when its query ends: the sleeper is ended here.
    await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND query = 'SELECT pg_sleep(60)'",
      [DATABASE],
    );
    await waitFor(async () => (await sessions(admin, DATABASE)) === 0, 'the sessions to be closed');
  });

  it('closes without having connected', async () => {
    const [source] = openSources(url, 1) as [Source];
    await source.close();
    await source.close();
  });

  it('answer the items of a batch asked together in few rounds, each its own answer, and a share released cuts no other holder off', async () => {
    const leases = await Promise.all(
      Array.from({ length: 10 }, () => acquireSessionLease({ connectionString: url })),
    );
    const rounds: number[][] = [];
    const square = async (client: pg.ClientBase, items: number[]) => {
      rounds.push(items);
      const { rows } = await client.query<{ v: number }>(
        'SELECT (v * v)::int AS v FROM unnest($1::int[]) WITH ORDINALITY AS t(v, i) ORDER BY i',
        [items],
      );
      return rows.map((r) => r.v);
    };
    try {
      // The session is busy: what is asked meanwhile waits for it, together.
      const busy = leases[0]?.run((client) => client.query('SELECT pg_sleep(0.2)'));
      const answers = leases.flatMap((lease, i) => [
        lease.batch('square', i, square),
        lease.batch('square', i + 100, square),
      ]);
      // A holder lets go of its share while its items wait: the others' are still answered.
      const [leaving] = leases.splice(9, 1);
      await leaving?.release();
      await busy;
      const settled = await Promise.allSettled(answers);
      expect(settled.map((r) => (r.status === 'fulfilled' ? r.value : 'failed'))).toEqual(
        Array.from({ length: 10 }, (_, i) => [i * i, (i + 100) * (i + 100)]).flat(),
      );
      expect(rounds.length).toBeLessThanOrEqual(2);
      // A batch that fails fails each of its items, and the next batch is asked afresh.
      const failing = async () => {
        throw new Error('refused');
      };
      await expect(
        Promise.all([leases[0]?.batch('fails', 1, failing), leases[1]?.batch('fails', 2, failing)]),
      ).rejects.toThrow('refused');
      expect(await leases[1]?.batch('square', 7, square)).toBe(49);
      await leaving?.release();
      await expect(leaving?.batch('square', 1, square)).rejects.toThrow(/not connected/);
    } finally {
      await Promise.all(leases.map((lease) => lease.release()));
    }
  });

  it('still fail to connect to a server that is not there', async () => {
    const port = await freePort();
    const source = createPostgresSource({ host: '127.0.0.1', port, database: DATABASE, user: 'postgres' });
    try {
      await expect(source.connect({ timeoutMs: 5_000 })).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await source.close();
    }
  });

  it('give up connecting within the timeout to a server that does not answer, and leave no attempt behind', async () => {
    // Accepts connections and never answers: a server that hangs, or one behind a black hole.
    const accepted = new Set<Socket>();
    const silent: Server = createServer((socket) => {
      accepted.add(socket);
      // Reads (and drops) what the client sends, so that its end is seen.
      socket.resume();
      socket.on('close', () => accepted.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    const source = createPostgresSource({ host: '127.0.0.1', port, database: DATABASE, user: 'postgres' });
    try {
      const started = Date.now();
      await expect(source.connect({ timeoutMs: 500 })).rejects.toThrow(/timeout/);
      expect(Date.now() - started).toBeLessThan(5_000);
      await source.close();
      await waitFor(() => accepted.size === 0, 'the connection attempt to be given up');
    } finally {
      await source.close();
      for (const socket of accepted) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
