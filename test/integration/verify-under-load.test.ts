import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { availableBinDirs } from '../support/pg-cluster.js';
import { replicationService, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import type { TestService } from '../support/service.js';

const TABLES = ['public.pgbench_accounts', 'public.pgbench_branches', 'public.pgbench_tellers'];

/** pgbench from the machine's PostgreSQL packages (the embedded server ships none). */
function pgbenchPath(): string {
  for (const { binDir } of availableBinDirs()) {
    const path = join(binDir, 'pgbench');
    if (existsSync(path)) return path;
  }
  throw new Error("pgbench not found: install PostgreSQL's client programs (Debian: postgresql-15)");
}

function pgbench(url: string, args: string[]): ChildProcess {
  return spawn(pgbenchPath(), [...args, url], { stdio: ['ignore', 'ignore', 'pipe'] });
}

const finished = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

/**
 * A verification of a correct pipeline while pgbench writes at the source (its TPC-B script at
 * PostgreSQL's default synchronous_commit, every transaction updating a branch, a teller and an
 * account) finds no difference, and still finds the one row added by hand in the sink.
 */
describe('verification under a pgbench load', { timeout: 300_000 }, () => {
  const { adminUrl } = inject('pgClusters')[0] as { adminUrl: string };
  let service: TestService;
  let dbs: { source: string; sink: string; store: string };
  let load: ChildProcess | undefined;
  const api = (method: string, path: string, body?: unknown) => service.request(method, path, body);

  beforeAll(async () => {
    ({ service, dbs } = await replicationService(
      adminUrl,
      `vload_${randomBytes(4).toString('hex')}`,
      'SELECT 1',
    ));
    // The test servers run with synchronous_commit off; users run the default, so the load does too.
    await sqlOn(
      dbs.source,
      "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = on', current_database()); END $$",
    );
    expect(await finished(pgbench(dbs.source, ['-i', '-s', '1', '-q']))).toBe(0);
    expect(
      (
        await api('POST', '/v1/pipelines', {
          name: 'bank',
          source: { connection: 'src', tables: TABLES },
          sink: { connection: 'dst' },
        })
      ).status,
    ).toBe(201);
    await api('PUT', '/v1/pipelines/bank/state', { state: 'start' });
    await waitConverged(dbs.source, dbs.sink, 'pgbench_accounts', 'aid');
    await sqlOn(
      dbs.sink,
      `INSERT INTO pgbench_accounts (aid, bid, abalance, filler) VALUES (100001, 1, 0, 'by hand')`,
    );
  });

  afterAll(async () => {
    load?.kill('SIGINT');
    await service?.stop();
  });

  it('reports no difference on a correct pipeline, and the row added by hand', async () => {
    expect((await sqlOn(dbs.source, 'SHOW synchronous_commit'))[0].synchronous_commit).toBe('on');
    load = pgbench(dbs.source, ['-n', '-c', '4', '-j', '2', '-T', '600', '-R', '400']);
    // The load is running and replicated before the verification starts.
    const before = Number((await sqlOn(dbs.source, 'SELECT sum(bbalance) AS s FROM pgbench_branches'))[0].s);
    await waitFor(async () => {
      const now = Number((await sqlOn(dbs.source, 'SELECT sum(bbalance) AS s FROM pgbench_branches'))[0].s);
      return now !== before;
    }, 'pgbench to write');

    const started = await api('POST', '/v1/pipelines/bank/verify', {});
    expect(started.status).toBe(202);
    const v = await waitFor(
      async () => {
        const { body } = await api('GET', `/v1/pipelines/bank/verifications/${started.body.id}`);
        return ['completed', 'failed', 'cancelled'].includes(body.status) ? body : undefined;
      },
      'the verification to end',
      240_000,
    );
    expect(load.exitCode, 'pgbench was still writing').toBeNull();
    expect(v.status, v.error).toBe('completed');
    const byTable = Object.fromEntries(v.tables.map((t: { table: string }) => [t.table, t]));
    expect(byTable['public.pgbench_accounts']).toMatchObject({
      status: 'differs',
      missing: 0,
      extra: 1,
      changed: 0,
      unsettled: 0,
    });
    expect(byTable['public.pgbench_accounts'].sample_keys).toContainEqual({
      kind: 'extra',
      key: { aid: '100001' },
    });
    for (const table of ['public.pgbench_branches', 'public.pgbench_tellers']) {
      // The branch row changes with every transaction: it is compared with the table held, exactly.
      expect(byTable[table], table).toMatchObject({
        status: 'matched',
        missing: 0,
        extra: 0,
        changed: 0,
        unsettled: 0,
      });
    }
  });
});
