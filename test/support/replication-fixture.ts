import pg from 'pg';
import { sharedStreamName } from '../../src/runtime/shared-stream/shared-streams.js';
import { createDatabase } from './pg-cluster.js';
import { startTestService, type TestService, testConfig } from './service.js';
import { waitFor } from './wait-for.js';

export { waitFor };

/** Runs one statement (or several, without parameters) on a database and returns its rows. */
export async function sqlOn<T extends pg.QueryResultRow = any>(
  url: string,
  text: string,
  params?: unknown[],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, params)).rows;
  } finally {
    await client.end();
  }
}

/** A store, a source and a sink database on one cluster, fresh for one test file. */
export async function replicationDatabases(adminUrl: string, prefix: string) {
  const [store, source, sink] = await Promise.all([
    createDatabase(adminUrl, `${prefix}_store`),
    createDatabase(adminUrl, `${prefix}_src`),
    createDatabase(adminUrl, `${prefix}_dst`),
  ]);
  return { store, source, sink };
}

/** A digest of a table's rows in key order, comparable across databases when columns and types match. */
export async function tableDigest(
  url: string,
  table: string,
  orderBy: string,
): Promise<{ rows: number; md5: string }> {
  const [row] = await sqlOn<{ rows: string; md5: string | null }>(
    url,
    `SELECT count(*) AS rows, md5(string_agg(t::text, '|' ORDER BY ${orderBy})) AS md5 FROM ${table} t`,
  );
  return { rows: Number(row?.rows), md5: row?.md5 ?? '' };
}

/**
 * Waits until every pipeline slot on the source's database has confirmed the position the source
 * has reached now: what was written before is delivered and acknowledged, so a duplicate of any of
 * it would already have been sent.
 */
export async function waitAcknowledged(source: string, timeoutMs = 60_000): Promise<void> {
  const [current] = await sqlOn<{ lsn: string }>(source, 'SELECT pg_current_wal_lsn()::text AS lsn');
  await waitFor(
    async () =>
      (
        await sqlOn<{ caught: boolean | null }>(
          source,
          `SELECT bool_and(confirmed_flush_lsn >= $1::pg_lsn) AS caught
             FROM pg_replication_slots WHERE database = current_database() AND slot_type = 'logical'`,
          [current?.lsn],
        )
      )[0]?.caught === true,
    `the slots to confirm ${current?.lsn}`,
    timeoutMs,
  );
}

/** Waits until the sink's copy of `table` equals the source's, row for row. */
export async function waitConverged(
  source: string,
  sink: string,
  table: string,
  order = 'id',
  timeoutMs = 120_000,
): Promise<void> {
  const expected = await tableDigest(source, table, order);
  await waitFor(
    async () => {
      const actual = await tableDigest(sink, table, order).catch(() => ({ rows: -1, md5: '' }));
      return actual.rows === expected.rows && actual.md5 === expected.md5;
    },
    `${table} to converge (${expected.rows} rows)`,
    timeoutMs,
  );
}

/** Creates the connections `src` and `dst` for a fixture's source and sink through the API. */
export async function createSourceAndSink(
  request: (method: string, path: string, body?: unknown) => Promise<{ status: number }>,
  dbs: { source: string; sink: string },
): Promise<void> {
  for (const [name, dsn] of [
    ['src', dbs.source],
    ['dst', dbs.sink],
  ] as const) {
    const res = await request('POST', '/v1/connections', { name, type: 'postgres', dsn });
    if (res.status !== 201) throw new Error(`creating connection ${name} answered ${res.status}`);
  }
}

/**
 * A fresh store, source and sink on one cluster, the source prepared with `sourceSql`, a service
 * on the store, and its connections `src` and `dst`: the start of most replication test files.
 */
export async function replicationService(adminUrl: string, prefix: string, sourceSql: string) {
  const dbs = await replicationDatabases(adminUrl, prefix);
  await sqlOn(dbs.source, sourceSql);
  const service = await startTestService(testConfig(dbs.store));
  await createSourceAndSink(service.request, dbs);
  return { dbs, service };
}

/** Creates pipeline `name` from `src` to `dst` over `tables`, starts it, and waits for the sink to hold every row. */
export async function startConvergedPipeline(
  service: TestService,
  dbs: { source: string; sink: string },
  name: string,
  tables: string[],
  extra: Record<string, unknown> = {},
): Promise<void> {
  const created = await service.request('POST', '/v1/pipelines', {
    name,
    source: { connection: 'src', tables },
    sink: { connection: 'dst' },
    ...extra,
  });
  if (created.status !== 201) throw new Error(`creating pipeline ${name} answered ${created.status}`);
  await service.request('PUT', `/v1/pipelines/${name}/state`, { state: 'start' });
  for (const table of tables) await waitConverged(dbs.source, dbs.sink, table);
}

/**
 * The replication slot a pipeline (as the API shows it) reads: its source connection's shared
 * stream's, or its own.
 */
export async function slotNameOf(
  store: string,
  pipeline: { id: string; project_id: string; source: { connection: string; slot: string } },
): Promise<string> {
  if (pipeline.source.slot !== 'shared') return `replicator_${pipeline.id.replaceAll('-', '')}`;
  const [connection] = await sqlOn<{ id: string }>(
    store,
    'SELECT id FROM connections WHERE project_id = $1 AND name = $2',
    [pipeline.project_id, pipeline.source.connection],
  );
  if (!connection) throw new Error(`no connection ${pipeline.source.connection}`);
  return sharedStreamName(connection.id);
}
