import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

/** The fields of a pipeline or an error these cases read. */
type Answer = { generation: number; source: { tables: string[] }; code?: string; error?: string };

/** A pipeline replaced with `If-Match` only while it is still the version the caller read. */
describe('replacing a pipeline with If-Match', () => {
  let service: TestService;
  const definition = (tables: string[]) => ({
    source: { connection: 'src', tables },
    sink: { connection: 'dst', properties: {} },
  });

  async function put(tables: string[], ifMatch?: string) {
    const res = await fetch(`${service.url}/v1/pipelines/orders`, {
      method: 'PUT',
      headers: {
        'content-type': 'application/json',
        ...(ifMatch === undefined ? {} : { 'if-match': ifMatch }),
      },
      body: JSON.stringify(definition(tables)),
    });
    return { status: res.status, etag: res.headers.get('etag'), body: (await res.json()) as Answer };
  }

  async function stored() {
    const res = await fetch(`${service.url}/v1/pipelines/orders`);
    return { etag: res.headers.get('etag'), body: (await res.json()) as Answer };
  }

  beforeAll(async () => {
    service = await startTestService(
      testConfig(await createDatabase(cluster?.adminUrl as string, 'if_match')),
    );
    for (const name of ['src', 'dst']) {
      const res = await service.request('POST', '/v1/connections', {
        name,
        type: 'postgres',
        dsn: `postgres://u:p@127.0.0.1:1/${name}`,
      });
      expect(res.status).toBe(201);
    }
    const res = await service.request('POST', '/v1/pipelines', {
      name: 'orders',
      ...definition(['public.a']),
    });
    expect(res.status).toBe(201);
  });
  afterAll(() => service?.stop());

  it('gives the version as the ETag of a read and of a replace', async () => {
    expect(await stored()).toMatchObject({ etag: '"1"', body: { generation: 1 } });
    const res = await put(['public.a', 'public.b'], '"1"');
    expect(res).toMatchObject({ status: 200, etag: '"2"', body: { generation: 2 } });
  });

  it('refuses a stale version with 412 DEFINITION_CHANGED, and changes nothing', async () => {
    const before = await stored();
    const res = await put(['public.z'], '"1"');
    expect(res.status).toBe(412);
    expect(res.body).toEqual({ code: 'DEFINITION_CHANGED', error: expect.stringContaining('read it again') });
    expect(await stored()).toEqual(before);
  });

  it('treats a tag that is not a version as stale, and * or no header as any version', async () => {
    expect((await put(['public.z'], 'W/"garbage"')).status).toBe(412);
    expect((await put(['public.c'], '*')).status).toBe(200);
    expect((await put(['public.d'])).status).toBe(200);
    expect((await stored()).body.source.tables).toEqual(['public.d']);
  });

  it('lets exactly one of two replaces from the same version through', async () => {
    const { etag } = await stored();
    const answers = await Promise.all([put(['public.x'], etag ?? ''), put(['public.y'], etag ?? '')]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 412]);
    const winner = answers.find((a) => a.status === 200);
    expect((await stored()).body.source.tables).toEqual(winner?.body.source.tables);
  });

  it('answers 404 for a pipeline that does not exist, whatever the version', async () => {
    const res = await fetch(`${service.url}/v1/pipelines/nowhere`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'if-match': '"1"' },
      body: JSON.stringify(definition(['public.a'])),
    });
    expect(res.status).toBe(404);
  });
});
