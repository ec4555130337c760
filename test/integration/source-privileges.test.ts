import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { replicationService, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import type { TestService } from '../support/service.js';

const [cluster] = inject('pgClusters');

// Roles are the cluster's, shared by every database: named for this file alone.
const APP = 'privtest_app';
const NOLOGIN = 'privtest_nologin';

/** `url` with another role, no password (the test cluster trusts local connections). */
function as(url: string, role: string): string {
  const u = new URL(url);
  u.username = role;
  u.password = '';
  return u.toString();
}

describe('the privileges of the source and sink roles', () => {
  let service: TestService;
  let dbs: { store: string; source: string; sink: string };
  let database: string;
  const tables = ['public.customers', 'public.orders'];
  const create = (name: string, source: object, sink = 'dst', properties: object = {}) =>
    service.request('POST', '/v1/pipelines', {
      name,
      source: { connection: 'shop', tables, ...source },
      sink: { connection: sink, properties },
    });
  const state = (name: string) => service.request('PUT', `/v1/pipelines/${name}/state`, { state: 'start' });

  beforeAll(async () => {
    ({ dbs, service } = await replicationService(
      cluster?.adminUrl as string,
      'privileges',
      `CREATE TABLE customers (id int PRIMARY KEY, name text);
       CREATE TABLE orders (id int PRIMARY KEY, customer int);
       CREATE TABLE audit (id int PRIMARY KEY);
       INSERT INTO customers SELECT g, 'c' || g FROM generate_series(1, 50) g;
       INSERT INTO orders SELECT g, g % 50 + 1 FROM generate_series(1, 80) g`,
    ));
    database = new URL(dbs.source).pathname.slice(1);
    // What the Quick start's user gave: REPLICATION and SELECT, nothing else.
    await sqlOn(
      dbs.source,
      `DROP ROLE IF EXISTS ${APP}; DROP ROLE IF EXISTS ${NOLOGIN};
       CREATE ROLE ${APP} LOGIN REPLICATION; CREATE ROLE ${NOLOGIN} NOLOGIN;
       GRANT SELECT ON customers, orders, audit TO ${APP}`,
    );
    for (const [name, dsn] of [
      ['shop', as(dbs.source, APP)],
      ['locked-out', as(dbs.sink, NOLOGIN)],
    ] as const) {
      expect((await service.request('POST', '/v1/connections', { name, type: 'postgres', dsn })).status).toBe(
        201,
      );
    }
  });
  afterAll(async () => {
    await service?.stop();
    // The pipelines' publications and slots went with their deletion or go with the database.
    await sqlOn(dbs.source, `DROP OWNED BY ${APP}; DROP ROLE ${APP}; DROP ROLE ${NOLOGIN}`).catch(
      () => undefined,
    );
  });

  it('refuses to create a pipeline whose role can neither create its publication nor publish the tables', async () => {
    const res = await create('needs-grants', {});
    expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    const message: string = res.body.error;
    expect(message).toContain(
      `source.connection: source connection 'shop' (role ${APP}) lacks what the pipeline needs`,
    );
    expect(message).toContain(`GRANT CREATE ON DATABASE ${database} TO ${APP};`);
    expect(message).toContain(`ALTER TABLE public.customers OWNER TO ${APP};`);
    expect(message).toContain(`ALTER TABLE public.orders OWNER TO ${APP};`);
    expect(message).toContain('CREATE PUBLICATION replicator FOR TABLE public.customers, public.orders;');
    expect(message).toContain('"publication": "replicator"');
    expect((await service.request('GET', '/v1/pipelines/needs-grants')).status).toBe(404);
  });

  it('names the table ownership still missing once CREATE on the database is granted', async () => {
    await sqlOn(
      dbs.source,
      `GRANT CREATE ON DATABASE ${database} TO ${APP}; ALTER TABLE orders OWNER TO ${APP}`,
    );
    try {
      const res = await create('needs-owner', {});
      expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
      const message: string = res.body.error;
      expect(message).toContain('ownership of table public.customers (owned by postgres), to publish it');
      expect(message).toContain(`ALTER TABLE public.customers OWNER TO ${APP};`);
      expect(message).not.toContain('GRANT CREATE ON DATABASE');
      expect(message).not.toContain('public.orders OWNER');

      await sqlOn(dbs.source, `ALTER TABLE customers OWNER TO ${APP}`);
      expect((await create('needs-owner', {})).status).toBe(201);
      expect((await service.request('DELETE', '/v1/pipelines/needs-owner')).status).toBe(204);
    } finally {
      // The SELECT granted to the role leaves with the ownership it had: granted again.
      await sqlOn(
        dbs.source,
        `REVOKE CREATE ON DATABASE ${database} FROM ${APP};
         ALTER TABLE orders OWNER TO postgres; ALTER TABLE customers OWNER TO postgres;
         GRANT SELECT ON customers, orders TO ${APP}`,
      );
    }
  });

  it('refuses a missing SELECT with the GRANT to run', async () => {
    await sqlOn(
      dbs.source,
      `REVOKE SELECT ON orders FROM ${APP}; CREATE PUBLICATION select_pub FOR TABLE customers, orders`,
    );
    try {
      const res = await create('needs-select', { publication: 'select_pub' });
      expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
      expect(res.body.error).toContain(
        `SELECT on public.orders, to copy it: run GRANT SELECT ON public.orders TO ${APP};`,
      );
    } finally {
      await sqlOn(dbs.source, `GRANT SELECT ON orders TO ${APP}; DROP PUBLICATION select_pub`);
    }
  });

  it('refuses a named publication that does not exist, or lacks a table, saying what to run', async () => {
    const missing = await create('no-pub', { publication: 'shop_pub' });
    expect(missing).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect(missing.body.error).toContain(
      `source.publication: source connection 'shop' cannot stream through publication shop_pub:`,
    );
    expect(missing.body.error).toContain(
      'CREATE PUBLICATION shop_pub FOR TABLE public.customers, public.orders;',
    );

    await sqlOn(dbs.source, 'CREATE PUBLICATION shop_pub FOR TABLE customers');
    const partial = await create('partial-pub', { publication: 'shop_pub' });
    expect(partial).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect(partial.body.error).toContain(
      'publication shop_pub does not publish public.orders: have its owner run ALTER PUBLICATION shop_pub ADD TABLE public.orders;',
    );
    expect((await service.request('GET', '/v1/pipelines/partial-pub')).status).toBe(404);
  });

  it('runs through a publication the user made, refuses a start once it lacks a table, and keeps it at delete', async () => {
    // Made by the tables' owner; it carries a table the pipeline does not replicate too.
    await sqlOn(dbs.source, 'ALTER PUBLICATION shop_pub SET TABLE customers, orders, audit');
    const created = await create('least', { publication: 'shop_pub' });
    expect(created.status).toBe(201);
    expect(created.body.source).toEqual({ connection: 'shop', tables, publication: 'shop_pub', slot: 'own' });

    await sqlOn(dbs.source, 'ALTER PUBLICATION shop_pub DROP TABLE orders');
    const refused = await state('least');
    expect(refused).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect(refused.body.error).toContain('ALTER PUBLICATION shop_pub ADD TABLE public.orders;');
    expect((await service.request('GET', '/v1/pipelines/least')).body.state).toBe('stopped');

    await sqlOn(dbs.source, 'ALTER PUBLICATION shop_pub ADD TABLE orders');
    expect((await state('least')).status).toBe(200);
    await waitConverged(dbs.source, dbs.sink, 'public.customers');
    await waitConverged(dbs.source, dbs.sink, 'public.orders');
    await sqlOn(
      dbs.source,
      `INSERT INTO customers VALUES (51, 'new'); UPDATE orders SET customer = 51 WHERE id = 1;
       DELETE FROM customers WHERE id = 2; INSERT INTO audit VALUES (1)`,
    );
    await waitConverged(dbs.source, dbs.sink, 'public.customers');
    await waitConverged(dbs.source, dbs.sink, 'public.orders');
    const running = await service.request('GET', '/v1/pipelines/least');
    expect(running.body).toMatchObject({ state: 'running', error: null });
    // The service made no publication of its own.
    const pubs = await sqlOn(
      dbs.source,
      "SELECT pubname FROM pg_publication WHERE pubname LIKE 'replicator%'",
    );
    expect(pubs).toEqual([]);

    expect((await service.request('PUT', '/v1/pipelines/least/state', { state: 'stop' })).status).toBe(200);
    await waitFor(
      async () => (await service.request('GET', '/v1/pipelines/least')).body.state === 'stopped',
      'the pipeline to stop',
    );
    expect((await service.request('DELETE', '/v1/pipelines/least')).status).toBe(204);
    const left = await sqlOn(dbs.source, "SELECT pubname FROM pg_publication WHERE pubname = 'shop_pub'");
    expect(left).toEqual([{ pubname: 'shop_pub' }]);
    const slots = await sqlOn(
      dbs.source,
      'SELECT slot_name FROM pg_replication_slots WHERE database = current_database()',
    );
    expect(slots).toEqual([]);
  });

  it('says it was the sink that refused the login, at create and at start', async () => {
    const res = await create('sink-refused', { publication: 'shop_pub' }, 'locked-out');
    expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
    expect(res.body.error).toContain(
      `sink.connection: the sink refused: sink connection 'locked-out': role "${NOLOGIN}" is not permitted to log in`,
    );

    // Tables it does not create are not looked at before the start: the start itself meets the refusal.
    const created = await create('sink-refused', { publication: 'shop_pub' }, 'locked-out', {
      create_tables: 'false',
    });
    expect(created.status).toBe(201);
    await state('sink-refused');
    const failed = await waitFor(async () => {
      const p = (await service.request('GET', '/v1/pipelines/sink-refused')).body;
      return p.state === 'failed' ? p : null;
    }, 'the pipeline to fail');
    expect(failed.error).toContain(
      `the sink refused: sink connection 'locked-out': role "${NOLOGIN}" is not permitted to log in`,
    );
  });
});
