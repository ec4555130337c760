import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { acquireInstance, releaseInstance } from '../../src/sinks/duckdb/instances.js';
import type { VerificationView } from '../../src/verify/verification-view.js';
import { availableBinDirs, createDatabase } from '../support/pg-cluster.js';
import { sqlOn, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const PGBENCH_TABLES = ['public.pgbench_accounts', 'public.pgbench_branches', 'public.pgbench_tellers'];
const KEYED_TABLES = ['public.words', 'public.pairs', 'public.things'];

const KEYED_SQL = `
  CREATE TABLE words (word text PRIMARY KEY, n integer);
  CREATE TABLE pairs (a integer, b text, v text, PRIMARY KEY (a, b));
  CREATE TABLE things (id uuid PRIMARY KEY, v integer, at timestamptz);
  INSERT INTO words SELECT 'w' || i || CASE WHEN i % 3 = 0 THEN 'Z' ELSE 'a' END, i FROM generate_series(1, 2000) i;
  INSERT INTO pairs SELECT i % 40, 'b' || i, 'v' || i FROM generate_series(1, 2000) i;
  INSERT INTO things SELECT md5(i::text)::uuid, i, '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 s'
    FROM generate_series(1, 2000) i;`;

/** pgbench from the machine's PostgreSQL packages (the embedded server ships none). */
function pgbenchPath(): string {
  for (const { binDir } of availableBinDirs()) {
    const path = join(binDir, 'pgbench');
    if (existsSync(path)) return path;
  }
  throw new Error("pgbench not found: install PostgreSQL's client programs (Debian: postgresql-15)");
}

const pgbench = (url: string, args: string[]): ChildProcess =>
  spawn(pgbenchPath(), [...args, url], { stdio: ['ignore', 'ignore', 'pipe'] });

const exited = (child: ChildProcess) =>
  child.exitCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

/** A SQL sink of one kind: its connection, and a way to change its tables by hand. */
interface SinkUnderTest {
  dsn: string;
  /** Runs statements on the sink; `T` is a table's name in the sink, e.g. `T('pgbench_accounts')`. */
  run(sql: (T: (table: string) => string) => string[]): Promise<void>;
  close(): Promise<void>;
}

async function postgresSink(adminUrl: string, prefix: string): Promise<SinkUnderTest> {
  const dsn = await createDatabase(adminUrl, `${prefix}_dst`);
  return {
    dsn,
    run: async (sql) => {
      for (const statement of sql((t) => `public.${t}`)) await sqlOn(dsn, statement);
    },
    close: async () => {},
  };
}

async function mysqlSink(prefix: string): Promise<SinkUnderTest> {
  const admin = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root', password: '' });
  await admin.query(`CREATE DATABASE \`${prefix}\``);
  return {
    dsn: `mysql://root@127.0.0.1:3306/${prefix}`,
    run: async (sql) => {
      for (const statement of sql((t) => `\`${prefix}\`.\`${t}\``)) await admin.query(statement);
    },
    close: async () => {
      await admin.query(`DROP DATABASE IF EXISTS \`${prefix}\``);
      await admin.end();
    },
  };
}

async function duckdbSink(dataDir: string, prefix: string): Promise<SinkUnderTest> {
  const file = `${prefix}.duckdb`;
  const path = join(await realpath(dataDir), 'duckdb', file);
  return {
    dsn: `duckdb:${file}`,
    // The service runs in this process: the test writes through the same instance of the file.
    run: async (sql) => {
      const instance = await acquireInstance(path);
      const conn = await instance.connect();
      try {
        for (const statement of sql((t) => `public."${t}"`)) await conn.run(statement);
      } finally {
        conn.closeSync();
        await releaseInstance(path);
      }
    },
    close: async () => {},
  };
}

type Verification = VerificationView;

/**
 * Verify and repair through the service, for every SQL sink: a correct pipeline verifies clean
 * while pgbench writes at the source (at PostgreSQL's default synchronous_commit), rows changed,
 * deleted and added by hand in the sink are each found by key and repaired, and tables keyed by
 * text, by two columns and by uuid compare in one order at both sides.
 */
describe.each(['postgres', 'mysql', 'duckdb'] as const)(
  'verify and repair into %s',
  { timeout: 300_000 },
  (kind) => {
    const { adminUrl } = inject('pgClusters')[0] as { adminUrl: string };
    const prefix = `vs_${kind}_${randomBytes(4).toString('hex')}`;
    let service: TestService;
    let source: string;
    let sink: SinkUnderTest;
    let dataDir: string;
    let load: ChildProcess | undefined;
    const api = (method: string, path: string, body?: unknown) => service.request(method, path, body);

    const ended = async (id: string): Promise<Verification> =>
      (await waitFor(
        async () => {
          const { body } = await api('GET', `/v1/pipelines/bank/verifications/${id}`);
          return ['completed', 'failed', 'cancelled'].includes(body.status)
            ? (body as Verification)
            : undefined;
        },
        `verification ${id} to end`,
        240_000,
      )) as Verification;

    const verify = async (): Promise<Verification> => {
      const started = (await waitFor(async () => {
        const res = await api('POST', '/v1/pipelines/bank/verify', {});
        return res.status === 202 ? res : undefined;
      }, 'a verification to be accepted')) as { body: { id: string } };
      const v = await ended(started.body.id);
      expect(v.status, v.error ?? '').toBe('completed');
      return v;
    };
    const table = (v: Verification, name: string) => v.tables.find((t) => t.table === name);

    beforeAll(async () => {
      source = await createDatabase(adminUrl, `${prefix}_src`);
      // The test servers run with synchronous_commit off; users run the default, so the load does too.
      await sqlOn(
        source,
        `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = on', current_database()); END $$`,
      );
      expect(await exited(pgbench(source, ['-i', '-s', '1', '-q']))).toBe(0);
      await sqlOn(source, KEYED_SQL);
      dataDir = await mkdtemp(join(tmpdir(), 'verify-sinks-'));
      service = await startTestService(
        testConfig(await createDatabase(adminUrl, `${prefix}_store`), dataDir),
      );
      sink =
        kind === 'postgres'
          ? await postgresSink(adminUrl, prefix)
          : kind === 'mysql'
            ? await mysqlSink(prefix)
            : await duckdbSink(dataDir, prefix);
      for (const [name, type, dsn] of [
        ['src', 'postgres', source],
        ['dst', kind, sink.dsn],
      ] as const) {
        const created = await api('POST', '/v1/connections', { name, type, dsn });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
      }
      const created = await api('POST', '/v1/pipelines', {
        name: 'bank',
        source: { connection: 'src', tables: [...PGBENCH_TABLES, ...KEYED_TABLES] },
        sink: { connection: 'dst' },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      await api('PUT', '/v1/pipelines/bank/state', { state: 'start' });
      await waitFor(
        async () => {
          const { body } = await api('GET', '/v1/pipelines/bank/progress');
          return (
            body.phase === 'streaming' &&
            body.tables.every((t: { status: string }) => t.status === 'streaming')
          );
        },
        'every table to stream',
        120_000,
      );
    });

    afterAll(async () => {
      if (load && load.exitCode === null) load.kill('SIGKILL');
      await api('PUT', '/v1/pipelines/bank/state', { state: 'stop' }).catch(() => undefined);
      await service?.stop();
      await sink?.close();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('reports no difference on a correct pipeline while pgbench writes', async () => {
      load = pgbench(source, ['-n', '-c', '4', '-j', '2', '-T', '600', '-R', '300']);
      const before = (await sqlOn(source, 'SELECT sum(bbalance) AS s FROM pgbench_branches'))[0].s;
      await waitFor(
        async () => (await sqlOn(source, 'SELECT sum(bbalance) AS s FROM pgbench_branches'))[0].s !== before,
        'pgbench to write',
      );
      const v = await verify();
      expect(load.exitCode, 'pgbench was still writing').toBeNull();
      for (const t of v.tables) {
        expect(t, t.table).toMatchObject({
          status: 'matched',
          missing: 0,
          extra: 0,
          changed: 0,
          unsettled: 0,
        });
      }
      load.kill('SIGINT');
      await exited(load);
    });

    it('finds rows changed, deleted and added by hand by key, with text, composite and uuid keys, and repairs them', async () => {
      await sink.run((T) => [
        `UPDATE ${T('pgbench_accounts')} SET abalance = abalance + 7 WHERE aid IN (11, 50000)`,
        `DELETE FROM ${T('pgbench_accounts')} WHERE aid = 77777`,
        `INSERT INTO ${T('pgbench_accounts')} (aid, bid, abalance, filler) VALUES (100005, 1, 0, 'by hand')`,
        `UPDATE ${T('words')} SET n = -1 WHERE word = 'w3Z'`,
        `DELETE FROM ${T('pairs')} WHERE a = 7 AND b = 'b1007'`,
        `UPDATE ${T('things')} SET v = 0 WHERE v = 2500 OR v = 1234`,
      ]);
      const v = await verify();
      expect(v.result).toBe('differs');
      expect(table(v, 'public.pgbench_accounts')).toMatchObject({
        status: 'differs',
        missing: 1,
        extra: 1,
        changed: 2,
      });
      expect(table(v, 'public.pgbench_accounts')?.sample_keys).toEqual(
        expect.arrayContaining([
          { kind: 'missing', key: { aid: '77777' } },
          { kind: 'extra', key: { aid: '100005' } },
          { kind: 'changed', key: { aid: '11' } },
          { kind: 'changed', key: { aid: '50000' } },
        ]),
      );
      expect(table(v, 'public.words')?.sample_keys).toEqual([{ kind: 'changed', key: { word: 'w3Z' } }]);
      expect(table(v, 'public.pairs')?.sample_keys).toEqual([
        { kind: 'missing', key: { a: '7', b: 'b1007' } },
      ]);
      const uuid = (await sqlOn(source, `SELECT id::text AS id FROM things WHERE v = 1234`))[0].id;
      expect(table(v, 'public.things')).toMatchObject({ changed: 1 });
      expect(table(v, 'public.things')?.sample_keys).toEqual([{ kind: 'changed', key: { id: uuid } }]);
      for (const name of ['public.pgbench_branches', 'public.pgbench_tellers']) {
        expect(table(v, name)?.status, name).toBe('matched');
      }

      const repair = await api('POST', `/v1/pipelines/bank/verifications/${v.id}/repair`);
      expect(repair.status, JSON.stringify(repair.body)).toBe(202);
      const repaired = (await waitFor(async () => {
        const { body } = await api('GET', `/v1/pipelines/bank/verifications/${v.id}`);
        return ['completed', 'failed'].includes(body.repair?.status) ? (body as Verification) : undefined;
      }, 'the repair to end')) as Verification;
      expect(repaired.repair).toMatchObject({ status: 'completed', error: null });
      const again = await ended(repaired.repair?.verification_id as string);
      expect(again, JSON.stringify({ error: again.error, tables: again.tables })).toMatchObject({
        status: 'completed',
        result: 'matched',
      });
      expect(again.tables.map((t) => t.table).sort()).toEqual(
        ['public.pgbench_accounts', 'public.words', 'public.pairs', 'public.things'].sort(),
      );
    });
  },
);
