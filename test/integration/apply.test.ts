import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { replicationDatabases, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

describe('POST /v1/apply', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const document = () => ({
    connections: [
      { name: 'src', type: 'postgres', dsn: dbs.source },
      { name: 'dst', type: 'postgres', dsn: dbs.sink },
    ],
    pipelines: [
      {
        name: 'orders',
        source: { connection: 'src', tables: ['public.orders'] },
        sink: { connection: 'dst' },
      },
      {
        name: 'notes',
        source: { connection: 'src', tables: ['public.notes'] },
        sink: { connection: 'dst' },
        schema_policy: 'auto',
      },
    ],
  });
  const apply = (body: unknown, query = '') => service.request('POST', `/v1/apply${query}`, body);
  const results = (plan: {
    connections: { name: string; result: string }[];
    pipelines: { name: string; result: string }[];
  }) => [
    ...plan.connections.map((e) => `connection ${e.name} ${e.result}`),
    ...plan.pipelines.map((e) => `pipeline ${e.name} ${e.result}`),
  ];

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'apply');
    await sqlOn(
      dbs.source,
      `CREATE TABLE orders (id int PRIMARY KEY, v int); INSERT INTO orders SELECT g, g FROM generate_series(1, 50) g;
       CREATE TABLE lines (id int PRIMARY KEY, v int); INSERT INTO lines SELECT g, g FROM generate_series(1, 30) g;
       CREATE TABLE notes (id int PRIMARY KEY, body text);`,
    );
    service = await startTestService(testConfig(dbs.store));
  });
  afterAll(() => service?.stop());

  it('changes nothing on a dry run, and says what it would do', async () => {
    const dry = await apply(document(), '?dry_run=true');
    expect(dry.status).toBe(200);
    expect(dry.body.dry_run).toBe(true);
    expect(results(dry.body)).toEqual([
      'connection src created',
      'connection dst created',
      'pipeline orders created',
      'pipeline notes created',
    ]);
    expect((await service.request('GET', '/v1/connections')).body).toEqual([]);
  });

  it('creates connections before the pipelines that name them; applied again, all unchanged', async () => {
    const first = await apply(document());
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(results(first.body)).toEqual([
      'connection src created',
      'connection dst created',
      'pipeline orders created',
      'pipeline notes created',
    ]);
    const again = await apply(document());
    expect(results(again.body)).toEqual([
      'connection src unchanged',
      'connection dst unchanged',
      'pipeline orders unchanged',
      'pipeline notes unchanged',
    ]);
  });

  it('updates only the pipeline that differs, and a running one reloads it', async () => {
    await service.request('PUT', '/v1/pipelines/orders/state', { state: 'start' });
    await waitConverged(dbs.source, dbs.sink, 'orders');
    const notesBefore = (await service.request('GET', '/v1/pipelines/notes')).body;
    const changed = document();
    (changed.pipelines[0] as { source: { tables: string[] } }).source.tables = [
      'public.orders',
      'public.lines',
    ];
    const res = await apply(changed);
    expect(res.body.pipelines).toEqual([
      { name: 'orders', result: 'updated', changes: ['source.tables'] },
      { name: 'notes', result: 'unchanged' },
    ]);
    // The running pipeline picked the new table up without a restart.
    await waitConverged(dbs.source, dbs.sink, 'lines');
    expect((await service.request('GET', '/v1/pipelines/orders')).body.state).toBe('running');
    expect((await service.request('GET', '/v1/pipelines/notes')).body.updated_at).toBe(
      notesBefore.updated_at,
    );
  });

  it('refuses a document with problems, listing every one with its path, and writes nothing', async () => {
    const bad = {
      connections: [
        { name: 'src', type: 'postgres', dsn: dbs.source },
        { name: 'other', type: 'postgres', dsn: 'mysql://x@y/z' },
      ],
      pipelines: [
        {
          name: 'p1',
          source: { connection: 'nope', tables: ['public.orders'] },
          sink: { connection: 'dst' },
        },
        {
          name: 'p2',
          source: { connection: 'src', tables: ['public.orders', 'public.orders'] },
          sink: { connection: 'dst' },
        },
        { name: 'p3', source: { connection: 'src' }, sink: { connection: 'dst' } },
      ],
    };
    const res = await apply(bad);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.error).toContain('pipelines[2].source.tables: is required');
    // Shape problems first: with one, the values are judged once the shape is right.
    const shaped = { ...bad, pipelines: bad.pipelines.slice(0, 2) };
    const values = await apply(shaped);
    expect(values.status).toBe(422);
    const paths = values.body.error;
    expect(paths).toContain('the document has 3 problems');
    expect(paths).toContain('connections[1].dsn');
    expect(paths).toContain("pipelines[0].source.connection: connection 'nope' does not exist");
    expect(paths).toContain("pipelines[1].source.tables[1]: 'public.orders' is listed twice");
    expect(values.body.details.problems).toEqual([
      { path: 'connections[1].dsn', message: expect.any(String) },
      { path: 'pipelines[0].source.connection', message: "connection 'nope' does not exist" },
      { path: 'pipelines[1].source.tables[1]', message: "'public.orders' is listed twice" },
    ]);
    expect((await service.request('GET', '/v1/connections/other')).status).toBe(404);
    expect((await service.request('GET', '/v1/pipelines/p1')).status).toBe(404);
  });

  it('prunes what the document does not name, but never a pipeline that is not stopped', async () => {
    const onlyOrders = { connections: document().connections, pipelines: [document().pipelines[0]] };
    onlyOrders.pipelines[0] = {
      ...onlyOrders.pipelines[0],
      source: { connection: 'src', tables: ['public.orders', 'public.lines'] },
    } as never;
    const withoutOrders = { connections: document().connections, pipelines: [document().pipelines[1]] };
    const refused = await apply(withoutOrders, '?prune=true');
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('PRUNE_REFUSED');
    expect(refused.body.details).toEqual({ pipelines: ['orders'] });
    expect(refused.body.error).toContain("'orders' (running)");
    expect((await service.request('GET', '/v1/pipelines/notes')).status).toBe(200);

    const pruned = await apply(onlyOrders, '?prune=true');
    expect(pruned.status, JSON.stringify(pruned.body)).toBe(200);
    expect(results(pruned.body)).toEqual([
      'connection src unchanged',
      'connection dst unchanged',
      'pipeline orders unchanged',
      'pipeline notes deleted',
    ]);
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/notes')).status === 404,
      'notes deleted',
    );
  });
  it('never tells whether a secret given in clear equals the stored one', async () => {
    const secretive = (password: string, secret: string) => ({
      connections: [
        { name: 'guarded', type: 'postgres', dsn: `postgres://app:${password}@db.example.com:5432/shop` },
        { name: 'hook', type: 'webhook', dsn: `https://receiver.example.com/hooks?secret=${secret}` },
      ],
    });
    const right = secretive('right-password', 'right-signing-secret-0123');
    const created = await apply(right);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const replaced = {
      result: 'updated',
      changes: ['secrets'],
      notes: ['password supplied: will be replaced'],
    };
    const guessedRight = await apply(right, '?dry_run=true');
    const guessedWrong = await apply(
      secretive('wrong-password', 'wrong-signing-secret-0123'),
      '?dry_run=true',
    );
    expect(guessedRight.status).toBe(200);
    expect(guessedRight.body).toEqual(guessedWrong.body);
    expect(guessedRight.body.connections).toEqual([
      { name: 'guarded', ...replaced },
      { name: 'hook', ...replaced },
    ]);
    // The real apply does what the plan says, and the masked secret still means "keep".
    const again = await apply(right);
    expect(again.body.connections).toEqual(guessedRight.body.connections);
    const masked = await apply(secretive('****', '****'), '?dry_run=true');
    expect(results(masked.body)).toEqual(['connection guarded unchanged', 'connection hook unchanged']);
    expect(JSON.stringify([created.body, guessedRight.body, guessedWrong.body])).not.toMatch(/right-|wrong-/);
  });
  it('refuses a second pipeline writing a table another pipeline of the project writes', async () => {
    const copy = {
      name: 'orders_copy',
      source: { connection: 'src', tables: ['public.orders'] },
      sink: { connection: 'dst' },
    };
    const created = await service.request('POST', '/v1/pipelines', copy);
    expect(created.status, JSON.stringify(created.body)).toBe(422);
    expect(created.body.code).toBe('VALIDATION_FAILED');
    expect(created.body.error).toContain(
      "pipelines 'orders' and 'orders_copy' would both write public.orders",
    );
    // Another connection to the same database is the same table.
    const twin = await service.request('POST', '/v1/connections', {
      name: 'dst_twin',
      type: 'postgres',
      dsn: dbs.sink,
    });
    expect(twin.status).toBe(201);
    const viaTwin = await service.request('POST', '/v1/pipelines', {
      ...copy,
      sink: { connection: 'dst_twin' },
    });
    expect(viaTwin.status).toBe(422);
    expect(viaTwin.body.error).toContain("connections 'dst' and 'dst_twin'");
    // Another target schema is another table.
    const elsewhere = await service.request('POST', '/v1/pipelines', {
      ...copy,
      sink: { connection: 'dst', properties: { target_schema: 'copies' } },
    });
    expect(elsewhere.status, JSON.stringify(elsewhere.body)).toBe(201);
    // Moving it onto the same target is refused too.
    const moved = await service.request('PUT', '/v1/pipelines/orders_copy', copy);
    expect(moved.status).toBe(422);
    expect(moved.body.error).toContain("'orders' and 'orders_copy'");

    // In a document, against the project's pipelines and between its own.
    const refused = await apply({ pipelines: [copy] }, '?dry_run=true');
    expect(refused.status).toBe(422);
    expect(refused.body.details.problems).toEqual([
      { path: 'pipelines[0].sink', message: expect.stringContaining("pipelines 'orders' and 'orders_copy'") },
    ]);
    const both = await apply(
      {
        pipelines: [
          { ...copy, sink: { connection: 'dst', properties: { target_schema: 'copies' } } },
          {
            ...copy,
            name: 'orders_third',
            sink: { connection: 'dst', properties: { target_schema: 'copies' } },
          },
        ],
      },
      '?dry_run=true',
    );
    expect(both.status).toBe(422);
    expect(both.body.details.problems).toEqual([
      {
        path: 'pipelines[1].sink',
        message: expect.stringContaining(
          "pipelines 'orders_copy' and 'orders_third' would both write copies.orders",
        ),
      },
    ]);
  });
});
