import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { runCommandLine } from '../../src/cli/run.js';
import { ADMIN, ApiCaller, enableAuth } from '../support/auth-client.js';
import { runCliAsync } from '../support/cli-process.js';
import {
  replicationDatabases,
  replicationService,
  sqlOn,
  startConvergedPipeline,
  waitConverged,
  waitFor,
} from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

async function runInProcess(argv: string[], env: NodeJS.ProcessEnv) {
  let stdout = '';
  let stderr = '';
  const io = {
    out: (text: string) => {
      stdout += text;
    },
    err: (text: string) => {
      stderr += text;
    },
    env,
    tty: false,
  };
  const code = await runCommandLine(argv, io);
  return { code, stdout, stderr };
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
const dir = mkdtempSync(join(tmpdir(), 'cli-client-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

// The document a team keeps in git: the DSNs come from the environment.
const DOCUMENT = `connections:
  - name: src
    type: postgres
    dsn: \${SOURCE_DSN}
  - name: dst
    type: postgres
    dsn: \${SINK_DSN}
pipelines:
  - name: orders
    source:
      connection: src
      tables: [public.orders]
    sink:
      connection: dst
  - name: notes
    source:
      connection: src
      tables: [public.notes]
    sink:
      connection: dst
    schema_policy: auto
`;

describe('the CLI against a running service', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let env: NodeJS.ProcessEnv;
  // In this process, as the binary runs it (one spawned binary costs seconds of TypeScript loading).
  const cli = (...args: string[]) => runInProcess([...args, '--url', service.url], env);

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'cli');
    await sqlOn(
      dbs.source,
      `CREATE TABLE orders (id int PRIMARY KEY, v int); INSERT INTO orders SELECT g, g FROM generate_series(1, 40) g;
       CREATE TABLE lines (id int PRIMARY KEY, v int);
       CREATE TABLE notes (id int PRIMARY KEY, body text);`,
    );
    service = await startTestService(testConfig(dbs.store));
    env = { SOURCE_DSN: dbs.source, SINK_DSN: dbs.sink, REPLICATOR_URL: '', REPLICATOR_TOKEN: '' };
  });
  afterAll(() => service?.stop());

  it('applies a document: the dry run prints the plan and changes nothing, then it creates, then all unchanged', async () => {
    const doc = file('pipelines.yaml', DOCUMENT);
    const dry = await cli('apply', '-f', doc, '--dry-run');
    expect(dry.stderr).toBe('');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toBe(
      [
        '+ connection src',
        '+ connection dst',
        '+ pipeline orders',
        '+ pipeline notes',
        'Dry run, nothing changed: 4 to create.',
        '',
      ].join('\n'),
    );
    const none = await cli('get', 'connections');
    expect([none.code, none.stdout, none.stderr]).toEqual([0, '', 'no connections in this project\n']);

    const applied = await cli('apply', '-f', doc);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain('Applied: 4 created.');
    const again = await cli('apply', '-f', doc, '-o', 'json');
    expect(JSON.parse(again.stdout)).toEqual({
      dry_run: false,
      connections: [
        { name: 'src', result: 'unchanged' },
        { name: 'dst', result: 'unchanged' },
      ],
      pipelines: [
        { name: 'orders', result: 'unchanged' },
        { name: 'notes', result: 'unchanged' },
      ],
    });
  });

  it('lists and shows pipelines and connections, as a table or as the API objects', async () => {
    const table = await cli('get', 'pipelines');
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+STATE\s+EVENTS\/S\s+LAG\s+LAST CHECKPOINT$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 2))).toEqual([
      ['notes', 'stopped'],
      ['orders', 'stopped'],
    ]);
    const one = await cli('get', 'pipeline', 'orders', '-o', 'json');
    expect(JSON.parse(one.stdout)).toMatchObject({ name: 'orders', source: { tables: ['public.orders'] } });
    const connectionTable = await cli('get', 'connections');
    expect(connectionTable.stdout.split('\n')[0]).toMatch(/^NAME\s+TYPE\s+DSN\s+UPDATED\s+ORPHANED SLOTS$/);
    expect(connectionTable.stdout).not.toContain('Orphaned replication slots');
    const connections = await cli('get', 'connections', '-o', 'yaml');
    expect(
      parse(connections.stdout)
        .map((c: { name: string }) => c.name)
        .sort(),
    ).toEqual(['dst', 'src']);
  });

  it('starts, pauses, resumes and stops a pipeline, waiting for each state; status shows it', async () => {
    const started = await cli('start', 'orders', '--wait');
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout.trimEnd().split('\n').at(-1)).toBe('pipeline orders: running');
    await waitConverged(dbs.source, dbs.sink, 'orders');

    const status = await cli('status', 'orders');
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('pipeline orders: running\n');
    expect(status.stdout).toMatch(/lag\s+\d/);
    expect(status.stdout).toMatch(/public\.orders\s+streaming\s+40\n/);
    const json = JSON.parse((await cli('status', 'orders', '-o', 'json')).stdout);
    expect(Object.keys(json)).toEqual(['pipeline', 'metrics', 'progress']);

    for (const [action, state] of [
      ['pause', 'paused'],
      ['resume', 'running'],
      ['stop', 'stopped'],
    ]) {
      const run = await cli(action as string, 'orders', '--wait');
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.trimEnd().split('\n').at(-1)).toBe(`pipeline orders: ${state}`);
    }
    const refused = await cli('resume', 'orders');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^replicator: .*\(409 INVALID_TRANSITION\)\n$/);
    // With --wait, being in the state already is done; a state the action cannot lead to is not.
    expect(await cli('stop', 'orders', '--wait')).toMatchObject({
      code: 0,
      stdout: 'pipeline orders: stopped\n',
    });
    expect((await cli('pause', 'orders', '--wait')).code).toBe(1);
    // Until the copy is done and the pipeline streams: here at once, every table copied before.
    const streaming = await cli('start', 'orders', '--wait', '--until', 'streaming');
    expect(streaming.code, streaming.stderr).toBe(0);
    expect(streaming.stdout.trimEnd().split('\n').at(-1)).toBe(
      'pipeline orders: running, 1 of 1 tables copied',
    );
    expect((await cli('stop', 'orders', '--wait')).code).toBe(0);
  });

  it('exports a document that apply takes back unchanged, and a change to it shows in the plan', async () => {
    const exported = file('exported.yaml', '');
    const run = await cli('export', '-f', exported);
    expect(run.code, run.stderr).toBe(0);
    const text = readFileSync(exported, 'utf8');
    expect(text.startsWith('# The connections and pipelines of a project')).toBe(true);
    expect(parse(text).pipelines.map((p: { name: string }) => p.name)).toEqual(['notes', 'orders']);

    const back = await cli('apply', '-f', exported);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toBe('Applied: 4 unchanged.\n');

    writeFileSync(exported, text.replace('- public.orders', '- public.orders\n        - public.lines'));
    const plan = await cli('apply', '-f', exported, '--dry-run');
    expect(plan.stdout).toBe(
      '~ pipeline orders (source.tables)\nDry run, nothing changed: 1 to update, 3 unchanged.\n',
    );
  });

  it('prunes what the document does not name', async () => {
    const onlyOrders = file('only-orders.yaml', DOCUMENT.slice(0, DOCUMENT.indexOf('  - name: notes')));
    const pruned = await cli('apply', '-f', onlyOrders, '--prune', '--dry-run');
    expect(pruned.stdout).toBe('- pipeline notes\nDry run, nothing changed: 1 to delete, 3 unchanged.\n');
  });

  it('lists every problem of a refused document, one per line, and exits 1', async () => {
    const bad = file(
      'bad.yaml',
      `connections: []
pipelines:
  - name: p1
    source: { connection: nope, tables: [public.orders] }
    sink: { connection: dst }
  - name: p2
    source: { connection: src, tables: [public.orders, public.orders] }
    sink: { connection: dst }
  - name: p3
    source: { connection: src, tables: [public.orders] }
    sink: { connection: nowhere }
`,
    );
    const run = await cli('apply', '-f', bad);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      [
        'replicator: the document has 3 problems (422 VALIDATION_FAILED)',
        "  pipelines[0].source.connection: connection 'nope' does not exist",
        "  pipelines[1].source.tables[1]: 'public.orders' is listed twice",
        "  pipelines[2].sink.connection: connection 'nowhere' does not exist",
        '',
      ].join('\n'),
    );
  });

  it.each([
    ['an unknown pipeline', ['start', 'nope'], 1, "pipeline 'nope' does not exist"],
    [
      'an unset variable',
      ['apply', '-f', join(dir, 'pipelines.yaml')],
      2,
      'SOURCE_DSN (at connections[0].dsn)',
    ],
    ['a missing file', ['apply', '-f', join(dir, 'none.yaml')], 2, 'ENOENT'],
    ['no file', ['apply'], 2, "required option '-f, --file <file>' not specified"],
    ['an unknown kind', ['get', 'slots'], 2, 'unknown kind "slots"'],
    ['an unknown command', ['frobnicate'], 2, "unknown command 'frobnicate'"],
  ])('exits with a status a script can rely on: %s', async (_what, args, code, message) => {
    const run = await runInProcess([...args, '--url', service.url], { ...env, SOURCE_DSN: undefined });
    expect(run.stderr).toContain(message);
    expect(run.code).toBe(code);
  });

  it('exits 4 when the service cannot be reached', async () => {
    const port = await closedPort();
    const run = await runCliAsync(['get', 'pipelines', '--url', `http://127.0.0.1:${port}`], env);
    expect(run.code).toBe(4);
    expect(run.stderr).toBe(
      `replicator: cannot reach the service at http://127.0.0.1:${port}/: ECONNREFUSED\n`,
    );
  });
});

describe('the CLI verifies a pipeline and repairs its sink', { timeout: 180_000 }, () => {
  let service: TestService;
  let dbs: { source: string; sink: string; store: string };
  const cli = (...args: string[]) => runInProcess([...args, '--url', service.url], {});

  beforeAll(async () => {
    ({ service, dbs } = await replicationService(
      cluster?.adminUrl as string,
      'cli_verify',
      'CREATE TABLE items (id int PRIMARY KEY, v text); INSERT INTO items SELECT g, g::text FROM generate_series(1, 300) g;',
    ));
    await startConvergedPipeline(service, dbs, 'items', ['public.items']);
  });
  afterAll(() => service?.stop());

  it('verify --wait exits 0 and lists the table matched; verifications and verification show it', async () => {
    const run = await cli('verify', 'items', '--wait');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^verification [0-9a-f-]{36} of pipeline items: completed, matched$/m);
    expect(run.stdout).toMatch(/^public\.items\s+matched\s+0\s+0\s+0\s+0\s+600$/m);
    const id = /verification ([0-9a-f-]{36})/.exec(run.stdout)?.[1] as string;

    const list = await cli('verifications', 'items');
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.split('\n')[1]).toMatch(new RegExp(`^${id}\\s.*\\scompleted\\s+matched\\s+1\\s`));
    const one = await cli('verification', 'items', id, '-o', 'json');
    expect(JSON.parse(one.stdout)).toMatchObject({
      id,
      result: 'matched',
      tables: [{ table: 'public.items' }],
    });
  });

  it('verify --repair finds a row changed by hand in the sink, repairs it and exits 0 once verified again', async () => {
    await sqlOn(dbs.sink, "UPDATE items SET v = 'changed by hand' WHERE id = 42");
    const run = await cli('verify', 'items', '--repair');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/: completed, differs$/m);
    expect(run.stdout).toMatch(/^public\.items\s+differs\s+0\s+0\s+1\s+0\s+[\d,]+$/m);
    expect(run.stdout).toContain('public.items: keys: changed id=42');
    expect(run.stdout).toMatch(/^repair of verification [0-9a-f-]{36}: completed$/m);
    // The follow-up verification of the repaired table, printed last.
    expect(run.stdout).toMatch(/repair of\s+[0-9a-f-]{36}\n(.*\n)*public\.items\s+matched/);
    await waitConverged(dbs.source, dbs.sink, 'items');
  });

  it('a sink that differs exits 6 with --wait', async () => {
    await sqlOn(dbs.sink, 'DELETE FROM items WHERE id = 7');
    const run = await cli('verify', 'items', '--wait', '--table', 'public.items');
    expect(run.code).toBe(6);
    expect(run.stdout).toContain('public.items: keys: missing id=7');
    expect(run.stderr).toMatch(/the sink differs from the source/);
  });
});

describe('the CLI reviews a schema change, lists runs and deletes a pipeline', { timeout: 180_000 }, () => {
  let service: TestService;
  let dbs: { source: string; sink: string; store: string };
  // The flags that reach the service, before the command as well.
  const cli = (...args: string[]) => runInProcess(['--url', service.url, ...args], {});

  beforeAll(async () => {
    ({ service, dbs } = await replicationService(
      cluster?.adminUrl as string,
      'cli_day_two',
      'CREATE TABLE items (id int PRIMARY KEY, v text); INSERT INTO items SELECT g, g::text FROM generate_series(1, 50) g;',
    ));
    await startConvergedPipeline(service, dbs, 'items', ['public.items']);
  });
  afterAll(() => service?.stop());

  it('approve shows the pending change and its DDL, then decides it; the pipeline resumes', async () => {
    await sqlOn(
      dbs.source,
      "ALTER TABLE items ADD COLUMN note text; INSERT INTO items VALUES (51, '51', 'n')",
    );
    await waitFor(
      async () =>
        (await service.request('GET', '/v1/pipelines/items')).body.state === 'pending_schema_approval',
      'the review',
    );
    const run = await cli('approve', 'items');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^schema change of public\.items \(proposal [0-9a-f-]{36}, since .+\):$/m);
    expect(run.stdout).toMatch(/^ {2}add_column .*"note"/m);
    expect(run.stdout).toMatch(/^ {2}ALTER TABLE .*ADD COLUMN .*note/m);
    expect(run.stdout).toMatch(/^pipeline items: approved the change of public\.items$/m);
    await waitConverged(dbs.source, dbs.sink, 'items');
    const none = await cli('reject', 'items');
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/NOT_FOUND|no schema change|does not exist/i);
  });

  it('runs lists the runs newest first; delete deletes the pipeline and its slot', async () => {
    const runs = await cli('runs', 'items');
    expect(runs.code, runs.stderr).toBe(0);
    expect(runs.stdout.split('\n')[0]).toMatch(/^STARTED\s+DURATION\s+EVENTS\s+OUTCOME\s+ERROR$/);
    expect(runs.stdout.split('\n')[1]).toMatch(/\srunning\s*$/);
    const deleted = await cli('delete', 'items');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe('pipeline items: deleted\n');
    expect((await service.request('GET', '/v1/pipelines/items')).status).toBe(404);
    expect(
      await sqlOn(
        dbs.source,
        'SELECT slot_name FROM pg_replication_slots WHERE database = current_database()',
      ),
    ).toEqual([]);
  });
});

describe('the CLI with authentication enabled', () => {
  let service: TestService;
  let admin: string;
  let viewer: string;

  beforeAll(async () => {
    const dbs = await replicationDatabases(cluster?.adminUrl as string, 'cli_auth');
    service = await startTestService(enableAuth(testConfig(dbs.store)));
    const browser = new ApiCaller(service.url);
    expect((await browser.call('POST', '/v1/admin/bootstrap', ADMIN)).status).toBe(201);
    expect((await browser.login(ADMIN.email, ADMIN.password)).status).toBe(200);
    admin = (await browser.call('POST', '/v1/tokens', { name: 'ci', lifetime_hours: 1 })).body.token;
    viewer = (await browser.call('POST', '/v1/tokens', { name: 'dash', lifetime_hours: 1, role: 'viewer' }))
      .body.token;
  });
  afterAll(() => service?.stop());

  it('sends the token from a file or the environment; without one, or with too weak a role, exits 5', async () => {
    const anonymous = await runCliAsync(['get', 'pipelines', '--url', service.url], { REPLICATOR_TOKEN: '' });
    expect(anonymous.code).toBe(5);
    expect(anonymous.stderr).toContain('without a valid token');

    const tokenFile = file('token', `${admin}\n`);
    const fromFile = await runInProcess(
      ['get', 'pipelines', '--url', service.url, '--token-file', tokenFile],
      {},
    );
    expect(fromFile.code, fromFile.stderr).toBe(0);
    const fromEnv = await runInProcess(['export', '--url', service.url], { REPLICATOR_TOKEN: admin });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    expect(parse(fromEnv.stdout)).toEqual({ connections: [], pipelines: [] });

    const empty = file('empty.yaml', 'connections: []\npipelines: []\n');
    const weak = await runInProcess(['apply', '-f', empty], {
      REPLICATOR_URL: service.url,
      REPLICATOR_TOKEN: viewer,
    });
    expect(weak.code).toBe(5);
    expect(weak.stderr).toContain('403 FORBIDDEN');
  });
});

describe('the CLI apply runs the checks that reach a source, on a dry run too', () => {
  let service: TestService;
  let env: NodeJS.ProcessEnv;
  const cli = (...args: string[]) => runInProcess([...args, '--url', service.url], env);

  beforeAll(async () => {
    const dbs = await replicationDatabases(cluster?.adminUrl as string, 'cli_live');
    await sqlOn(dbs.source, 'CREATE TABLE keyed (id int PRIMARY KEY); CREATE TABLE loose (id int);');
    service = await startTestService(testConfig(dbs.store));
    env = { SOURCE_DSN: dbs.source, SINK_DSN: dbs.sink, REPLICATOR_URL: '', REPLICATOR_TOKEN: '' };
  });
  afterAll(() => service?.stop());

  it('prints a missing table and a table without a key, one line each, exits 1 and creates nothing', async () => {
    const doc = file(
      'live.yaml',
      `${DOCUMENT.slice(0, DOCUMENT.indexOf('pipelines:'))}pipelines:
  - name: ghost
    source: { connection: src, tables: [public.keyed, public.ghost] }
    sink: { connection: dst }
  - name: loose
    source: { connection: src, tables: [public.loose] }
    sink: { connection: dst }
`,
    );
    for (const flags of [['--dry-run'], []]) {
      const run = await cli('apply', '-f', doc, ...flags);
      expect(run.code, run.stderr).toBe(1);
      expect(run.stdout).toBe('');
      const lines = run.stderr.split('\n');
      expect(lines[0]).toBe('replicator: the document has 2 problems (422 VALIDATION_FAILED)');
      expect(lines[1]).toMatch(/^ {2}pipelines\[0\]\.source\.tables\[1\]: public\.ghost does not exist/);
      expect(lines[2]).toMatch(/^ {2}pipelines\[1\]\.source\.tables\[0\]: public\.loose has no primary key/);
      expect((await service.request('GET', '/v1/pipelines')).body).toEqual([]);
      expect((await service.request('GET', '/v1/connections')).body).toEqual([]);
    }
  });
});
