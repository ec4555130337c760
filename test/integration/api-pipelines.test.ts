import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defaultSourceSlot } from '../../src/pipelines/source-slot.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

describe.each(inject('pgClusters'))('pipelines API on $label', (cluster) => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService(testConfig(await createDatabase(cluster.adminUrl, 'api_pipelines')));
    for (const name of ['src', 'dst']) {
      const res = await service.request('POST', '/v1/connections', {
        name,
        type: 'postgres',
        dsn: `postgres://u:p@127.0.0.1:1/${name}`,
      });
      expect(res.status).toBe(201);
    }
  });
  afterAll(() => service?.stop());

  const definition = {
    name: 'orders',
    source: { connection: 'src', tables: ['public.orders', 'sales.Line_Items'] },
    sink: { connection: 'dst', properties: { target_schema: 'replica' } },
  };

  it('creates a pipeline, stopped, with the full object', async () => {
    const res = await service.request('POST', '/v1/pipelines', definition);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'orders',
      source: definition.source,
      sink: definition.sink,
      state: 'stopped',
      desired_state: 'stopped',
      events_per_second: 0,
      replication_lag_ms: 0,
      last_checkpoint_at: null,
      generation: 1,
      project_id: '00000000-0000-4000-8000-000000000002',
    });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('defaults sink.properties to an empty map', async () => {
    const res = await service.request('POST', '/v1/pipelines', {
      name: 'bare',
      source: { connection: 'src', tables: ['public.a'] },
      sink: { connection: 'dst' },
    });
    expect(res.status).toBe(201);
    expect(res.body.sink.properties).toEqual({});
  });

  it('lists summaries with exactly the summary fields', async () => {
    const res = await service.request('GET', '/v1/pipelines');
    expect(res.status).toBe(200);
    const orders = res.body.find((p: { name: string }) => p.name === 'orders');
    // The specification's summary fields, and the project every pipeline carries (a list of every
    // project's, with authentication off, may hold one name twice).
    expect(Object.keys(orders).sort()).toEqual(
      ['events_per_second', 'last_checkpoint_at', 'name', 'project_id', 'replication_lag_ms', 'state'].sort(),
    );
  });

  it('gets a pipeline', async () => {
    const res = await service.request('GET', '/v1/pipelines/orders');
    expect(res.status).toBe(200);
    expect(res.body.source.tables).toEqual(['public.orders', 'sales.Line_Items']);
  });

  it('replaces the definition and bumps the generation', async () => {
    const res = await service.request('PUT', '/v1/pipelines/orders', {
      source: { connection: 'src', tables: ['public.orders'] },
      sink: { connection: 'dst', properties: {} },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      source: { tables: ['public.orders'] },
      generation: 2,
      state: 'stopped',
    });
    expect((await service.request('GET', '/v1/pipelines/orders')).body.generation).toBe(2);
  });

  it.each([
    ['missing source', { name: 'x', sink: { connection: 'dst' } }, 400, 'BAD_REQUEST', 'source: is required'],
    [
      'tables not an array',
      { ...definition, name: 'x', source: { connection: 'src', tables: 'public.a' } },
      400,
      'BAD_REQUEST',
      'source.tables',
    ],
    [
      'non-string property',
      { ...definition, name: 'x', sink: { connection: 'dst', properties: { a: 1 } } },
      400,
      'BAD_REQUEST',
      'sink.properties.a',
    ],
    [
      'unknown field',
      { ...definition, name: 'x', paused: true },
      400,
      'BAD_REQUEST',
      'paused: is not a known field',
    ],
    [
      'empty table list',
      { ...definition, name: 'x', source: { connection: 'src', tables: [] } },
      422,
      'VALIDATION_FAILED',
      'source.tables',
    ],
    [
      'malformed table',
      { ...definition, name: 'x', source: { connection: 'src', tables: ['public.a', 'orders'] } },
      422,
      'VALIDATION_FAILED',
      'source.tables[1]: must be "<schema>.<table>"',
    ],
    [
      'table with quote',
      { ...definition, name: 'x', source: { connection: 'src', tables: ['public.a"b'] } },
      422,
      'VALIDATION_FAILED',
      'source.tables[0]',
    ],
    [
      'duplicate table',
      {
        ...definition,
        name: 'x',
        source: { connection: 'src', tables: ['public.a', 'public.b', 'public.a'] },
      },
      422,
      'VALIDATION_FAILED',
      "source.tables[2]: 'public.a' is listed twice",
    ],
    [
      'unknown source connection',
      { ...definition, name: 'x', source: { connection: 'nope', tables: ['public.a'] } },
      422,
      'VALIDATION_FAILED',
      "source.connection: connection 'nope' does not exist",
    ],
    [
      'unknown sink connection',
      { ...definition, name: 'x', sink: { connection: 'nope' } },
      422,
      'VALIDATION_FAILED',
      "sink.connection: connection 'nope' does not exist",
    ],
    ['bad name', { ...definition, name: '-x' }, 422, 'VALIDATION_FAILED', 'name: must be'],
    ['duplicate name', definition, 409, 'ALREADY_EXISTS', "pipeline 'orders' already exists"],
  ])('refuses %s', async (_label, body, status, code, message) => {
    const res = await service.request('POST', '/v1/pipelines', body);
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ code, error: expect.stringContaining(message) });
  });

  it('refuses a bad replacement and keeps the stored definition', async () => {
    const before = (await service.request('GET', '/v1/pipelines/orders')).body;
    const res = await service.request('PUT', '/v1/pipelines/orders', {
      source: { connection: 'missing', tables: ['public.orders'] },
      sink: { connection: 'dst' },
    });
    expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    const rename = await service.request('PUT', '/v1/pipelines/orders', { ...definition, name: 'renamed' });
    expect(rename).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect((await service.request('GET', '/v1/pipelines/orders')).body).toEqual(before);
  });

  it('answers 404 NOT_FOUND for a missing pipeline', async () => {
    for (const method of ['GET', 'DELETE']) {
      expect(await service.request(method, '/v1/pipelines/missing')).toMatchObject({
        status: 404,
        body: { code: 'NOT_FOUND', error: "pipeline 'missing' does not exist" },
      });
    }
    const put = await service.request('PUT', '/v1/pipelines/missing', definition);
    expect(put).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
  });

  it('deletes a pipeline with 204 and an empty body', async () => {
    const res = await fetch(`${service.url}/v1/pipelines/bare`, {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect((await service.request('GET', '/v1/pipelines/bare')).status).toBe(404);
  });

  it('answers unknown routes with the error body', async () => {
    expect(await service.request('GET', '/v1/nothing')).toEqual({
      status: 404,
      body: { error: 'no route GET /v1/nothing', code: 'NOT_FOUND' },
    });
  });

  it('refuses a body over the size limit with 413', async () => {
    const res = await service.request('POST', '/v1/pipelines', {
      ...definition,
      name: 'big',
      pad: 'x'.repeat(2_000_000),
    });
    expect(res).toMatchObject({ status: 413, body: { code: 'PAYLOAD_TOO_LARGE' } });
  });

  it('reports health', async () => {
    const res = await service.request('GET', '/v1/health');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', workers: 1, pipelines_running: 0 });
    expect(res.body.version).toMatch(/^v\d+\.\d+\.\d+$/);
  });

  it('serves the OpenAPI document with the routes', async () => {
    const res = await service.request('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toMatch(/^3\./);
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/pipelines',
        '/v1/pipelines/{name}',
        '/v1/connections',
        '/v1/connections/{name}',
        '/v1/health',
      ]),
    );
    expect(res.body.paths['/v1/pipelines'].post.responses['422']).toBeDefined();
  });

  it('answers 400 naming the allowed values for an action or a parameter outside its set', async () => {
    await service.request('POST', '/v1/pipelines', { ...definition, name: 'values' });
    const state = await service.request('PUT', '/v1/pipelines/values/state', { state: 'go' });
    expect(state).toMatchObject({
      status: 400,
      body: { code: 'BAD_REQUEST', error: 'state: must be one of start, stop, pause, resume' },
    });
    // A wrong JSON type is a shape problem: 400 too.
    const typed = await service.request('PUT', '/v1/pipelines/values/state', { state: 1 });
    expect(typed).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    const force = await service.request('DELETE', '/v1/pipelines/values?force=yes');
    expect(force).toMatchObject({
      status: 400,
      body: { code: 'BAD_REQUEST', error: 'force: must be one of true, false' },
    });
    expect((await service.request('GET', '/v1/pipelines/values')).status).toBe(200);
    for (const [query, error] of [
      ['limit=0', 'limit: must be from 1 to 100'],
      ['limit=101', 'limit: must be from 1 to 100'],
      ['cursor=garbage', 'cursor: is not a cursor returned by this endpoint'],
    ]) {
      const runs = await service.request('GET', `/v1/pipelines/values/runs?${query}`);
      expect(runs, query).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST', error } });
    }
    const words = await service.request('GET', '/v1/pipelines/values/runs?limit=ten');
    expect(words).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    expect(words.body.error).toMatch(/^limit: /);
    const backfill = await service.request('POST', '/v1/pipelines/values/backfill', {
      tables: ['public.nope'],
    });
    expect(backfill).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    expect(backfill.body.error).toContain("'public.nope' is not a table of pipeline 'values'");
    const none = await service.request('POST', '/v1/pipelines/values/backfill', { tables: [] });
    expect(none).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    const dryRun = await service.request('POST', '/v1/apply?dry_run=maybe', {});
    expect(dryRun).toMatchObject({
      status: 400,
      body: { code: 'BAD_REQUEST', error: 'dry_run: must be one of true, false' },
    });
  });

  it('keeps 422 for a definition that fails validation', async () => {
    const policy = await service.request('POST', '/v1/pipelines', {
      ...definition,
      name: 'values2',
      schema_policy: 'sometimes',
    });
    expect(policy).toMatchObject({
      status: 422,
      body: { code: 'VALIDATION_FAILED', error: 'schema_policy: must be one of review, auto, ignore' },
    });
    const applied = await service.request('POST', '/v1/apply', {
      pipelines: [{ ...definition, name: 'values3', schema_policy: 'sometimes' }],
    });
    expect(applied).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
  });

  describe('source.slot', () => {
    const slotted = (name: string, source: Record<string, unknown>) => ({
      name,
      source: { connection: 'src', tables: [`public.${name.replaceAll('-', '_')}`], ...source },
      sink: { connection: 'dst' },
    });
    const slotOf = async (name: string) =>
      (await service.request('GET', `/v1/pipelines/${name}`)).body.source.slot;

    it('shows the default when left out: own with a publication, the default rule without', async () => {
      const bare = await service.request('POST', '/v1/pipelines', slotted('slot-default', {}));
      expect(bare.status).toBe(201);
      expect(bare.body.source.slot).toBe(defaultSourceSlot(undefined));
      expect(await slotOf('slot-default')).toBe(defaultSourceSlot(undefined));
      const named = await service.request(
        'POST',
        '/v1/pipelines',
        slotted('slot-named-pub', { publication: 'shop_pub' }),
      );
      expect(named.status).toBe(201);
      expect(named.body.source).toMatchObject({ publication: 'shop_pub', slot: 'own' });
    });

    it.each(['own', 'shared'])('stores and shows slot %s as given', async (slot) => {
      const res = await service.request('POST', '/v1/pipelines', slotted(`slot-${slot}`, { slot }));
      expect(res.status).toBe(201);
      expect(res.body.source.slot).toBe(slot);
      expect(await slotOf(`slot-${slot}`)).toBe(slot);
      const listed = await service.request('GET', '/v1/pipelines');
      expect(listed.body.map((p: { name: string }) => p.name)).toContain(`slot-${slot}`);
    });

    it('refuses shared with a publication the user made, saying why', async () => {
      const res = await service.request(
        'POST',
        '/v1/pipelines',
        slotted('slot-shared-pub', { publication: 'shop_pub', slot: 'shared' }),
      );
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(res.body.error).toMatch(/^source\.slot: /);
      expect(res.body.error).toContain('a publication it owns');
      expect(res.body.error).toContain('needs a slot of its own');
      expect((await service.request('GET', '/v1/pipelines/slot-shared-pub')).status).toBe(404);
      // With a publication, own is the only mode.
      const own = await service.request(
        'POST',
        '/v1/pipelines',
        slotted('slot-own-pub', { publication: 'shop_pub', slot: 'own' }),
      );
      expect(own.status).toBe(201);
      expect(own.body.source.slot).toBe('own');
    });

    it('refuses a value outside its set', async () => {
      const res = await service.request('POST', '/v1/pipelines', slotted('slot-bad', { slot: 'both' }));
      expect(res).toMatchObject({
        status: 422,
        body: { code: 'VALIDATION_FAILED', error: 'source.slot: must be one of shared, own' },
      });
    });

    it('refuses a change of the slot mode, keeping the stored definition', async () => {
      for (const [name, other] of [
        ['slot-shared', 'own'],
        ['slot-own', 'shared'],
      ] as const) {
        const before = (await service.request('GET', `/v1/pipelines/${name}`)).body;
        const res = await service.request('PUT', `/v1/pipelines/${name}`, {
          ...slotted(name, { slot: other }),
          name: undefined,
        });
        expect(res).toEqual({
          status: 422,
          body: {
            code: 'VALIDATION_FAILED',
            error:
              'source.slot: the slot mode is chosen when a pipeline is created; create a new pipeline to change it',
          },
        });
        expect((await service.request('GET', `/v1/pipelines/${name}`)).body).toEqual(before);
      }
    });

    it('keeps the stored mode when a replacement leaves it out, and refuses a publication on a shared one', async () => {
      for (const [name, slot] of [
        ['slot-shared', 'shared'],
        ['slot-own', 'own'],
      ] as const) {
        const table = `public.${name.replace('-', '_')}`;
        const res = await service.request('PUT', `/v1/pipelines/${name}`, {
          source: { connection: 'src', tables: [table, `${table}_more`] },
          sink: { connection: 'dst' },
        });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.source).toEqual({ connection: 'src', tables: [table, `${table}_more`], slot });
        expect(await slotOf(name)).toBe(slot);
        // The same mode given again is no change.
        const same = await service.request('PUT', `/v1/pipelines/${name}`, {
          source: { connection: 'src', tables: [table], slot },
          sink: { connection: 'dst' },
        });
        expect(same.status).toBe(200);
        expect(same.body.source.slot).toBe(slot);
      }
      const before = (await service.request('GET', '/v1/pipelines/slot-shared')).body;
      const published = await service.request('PUT', '/v1/pipelines/slot-shared', {
        source: { connection: 'src', tables: ['public.slot_shared'], publication: 'shop_pub' },
        sink: { connection: 'dst' },
      });
      expect(published.status).toBe(422);
      expect(published.body.error).toMatch(/^source\.publication: .*shared stream/);
      expect((await service.request('GET', '/v1/pipelines/slot-shared')).body).toEqual(before);
    });

    it('takes back its exported definitions unchanged, and refuses a slot changed in the document', async () => {
      const names = ['slot-default', 'slot-named-pub', 'slot-own', 'slot-own-pub', 'slot-shared'];
      // Each pipeline as `replicator export` writes it.
      const exported = await Promise.all(
        names.map(async (name) => {
          const p = (await service.request('GET', `/v1/pipelines/${name}`)).body;
          return {
            name: p.name,
            source: p.source,
            sink: {
              connection: p.sink.connection,
              ...(Object.keys(p.sink.properties).length > 0 ? { properties: p.sink.properties } : {}),
            },
            snapshot: p.snapshot,
            schema_policy: p.schema_policy,
          };
        }),
      );
      expect(exported.map((p) => p.source.slot)).toEqual([
        defaultSourceSlot(undefined),
        'own',
        'own',
        'own',
        'shared',
      ]);
      const generations = await Promise.all(
        names.map(async (name) => (await service.request('GET', `/v1/pipelines/${name}`)).body.generation),
      );
      for (const query of ['?dry_run=true', '']) {
        const res = await service.request('POST', `/v1/apply${query}`, { pipelines: exported });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.pipelines).toEqual(names.map((name) => ({ name, result: 'unchanged' })));
      }
      // Left out of the document, the stored mode is kept: no change either.
      const unslotted = exported.map((p) => ({ ...p, source: { ...p.source, slot: undefined } }));
      const kept = await service.request('POST', '/v1/apply', { pipelines: unslotted });
      expect(kept.body.pipelines).toEqual(names.map((name) => ({ name, result: 'unchanged' })));
      expect(
        await Promise.all(
          names.map(async (name) => (await service.request('GET', `/v1/pipelines/${name}`)).body.generation),
        ),
      ).toEqual(generations);

      const flipped = exported.map((p) =>
        p.name === 'slot-shared' ? { ...p, source: { ...p.source, slot: 'own' } } : p,
      );
      const refused = await service.request('POST', '/v1/apply', { pipelines: flipped });
      expect(refused.status).toBe(422);
      expect(refused.body.details.problems).toEqual([
        {
          path: `pipelines[${names.indexOf('slot-shared')}].source.slot`,
          message: 'the slot mode is chosen when a pipeline is created; create a new pipeline to change it',
        },
      ]);
      expect(await slotOf('slot-shared')).toBe('shared');
    });
  });
});
