import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import type { TableSchema } from '../../src/core/change.js';
import type { Sink } from '../../src/core/sink.js';
import type { SinkComparison } from '../../src/core/table-comparison.js';
import { duckdbConnectionType } from '../../src/sinks/duckdb/duckdb-connection-type.js';
import { createDuckdbSink } from '../../src/sinks/duckdb/duckdb-sink.js';
import { acquireInstance, releaseInstance } from '../../src/sinks/duckdb/instances.js';
import type { VerifyLimits } from '../../src/verify/table-verifier.js';
import { memorySinkState } from '../support/memory-sink-state.js';
import { createDatabase } from '../support/pg-cluster.js';
import { sqlOn } from '../support/replication-fixture.js';
import { copyIntoSink, seedSource, VERIFY_TABLES, verifyTable } from '../support/verify-fixture.js';

describe('comparing a table between a PostgreSQL source and a DuckDB sink', () => {
  const { adminUrl } = inject('pgClusters')[0] as { adminUrl: string };
  const prefix = `tvd_${randomBytes(4).toString('hex')}`;
  let root: string;
  let path: string;
  let source: string;
  let shapes: Map<string, TableSchema>;
  let sink: Sink;
  let side: SinkComparison;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'verify-duckdb-'));
    source = await createDatabase(adminUrl, `${prefix}_src`);
    shapes = await seedSource(source);
    const policy = { ...NO_LOCAL_ACCESS, dataDir: root, duckdbDirs: [root] };
    const settings = await duckdbConnectionType.settings('duckdb:sink.duckdb', { tls: {} }, policy);
    path = settings.path;
    sink = createDuckdbSink({
      pipelineId: randomUUID(),
      connection: settings,
      properties: {},
      state: memorySinkState(),
    });
    await sink.open([...shapes.values()]);
    await copyIntoSink(source, sink, shapes);
    side = await (sink.comparison as () => Promise<SinkComparison>).call(sink);
  });

  afterAll(async () => {
    await sink?.close();
    await sqlOn(adminUrl, `DROP DATABASE IF EXISTS ${prefix}_src WITH (FORCE)`);
    await rm(root, { recursive: true, force: true });
  });

  const verify = (table: string, limits: Partial<VerifyLimits> = {}) =>
    verifyTable(source, side, shapes.get(table) as TableSchema, limits);

  /** Changes the sink's tables by hand, through the process's instance of the file. */
  async function inSink(sql: string): Promise<void> {
    const conn = await (await acquireInstance(path)).connect();
    try {
      await conn.run(sql);
    } finally {
      conn.closeSync();
      await releaseInstance(path);
    }
  }

  it('finds the tables the sink wrote equal, every column but the float and the LIST compared', async () => {
    for (const t of VERIFY_TABLES) {
      const { verdict } = await verify(t);
      expect(verdict, t).toMatchObject({ status: 'matched', missing: 0, extra: 0, changed: 0 });
      expect(
        verdict.columns_not_verified.map((c) => c.column),
        t,
      ).toEqual(t === 'items' ? ['tags', 'ratio'] : []);
      expect(verdict.source_rows).toBe(verdict.sink_rows);
    }
  });

  it('finds rows changed, deleted and added in the sink, by key', async () => {
    await inSink(
      `UPDATE public.items SET price = price + 0.01 WHERE id IN (7, 15001);
      UPDATE public.items SET code = 'c7   ' WHERE id = 29999; DELETE FROM public.items WHERE id = 20000;
      INSERT INTO public.items (id, name) VALUES (40000, 'stray'); UPDATE public.items SET name = NULL WHERE id = 3;
      UPDATE public.items SET clock = TIME '00:00:00' WHERE id = 1; UPDATE public.items SET doc = '{"i":11}' WHERE id = 11;
      UPDATE public.items SET "at" = "at" + INTERVAL 1 MICROSECOND WHERE id = 13;`,
    );
    const { verdict, keys } = await verify('items');
    expect(verdict).toMatchObject({ status: 'differs', missing: 1, extra: 1, changed: 7 });
    expect(keys.map((k) => k[0]).sort()).toEqual([
      '1',
      '11',
      '13',
      '15001',
      '20000',
      '29999',
      '3',
      '40000',
      '7',
    ]);
    expect(verdict.sample_keys).toContainEqual({ kind: 'missing', key: { id: '20000' } });
    expect(verdict.sample_keys).toContainEqual({ kind: 'extra', key: { id: '40000' } });
    expect(verdict.sample_keys).toContainEqual({ kind: 'changed', key: { id: '7' } });
  });

  it('compares text, composite, uuid, date and decimal keys in one order at both sides', async () => {
    const uuid = (await sqlOn(source, `SELECT md5('2500')::uuid::text AS u`))[0].u as string;
    await inSink(
      `UPDATE public.words SET n = -1 WHERE word = 'w3000Z'; DELETE FROM public.pairs WHERE a = 7 AND b = 'b1007';
      UPDATE public.things SET v = 0 WHERE id = '${uuid}';`,
    );
    expect((await verify('words')).keys).toEqual([['w3000Z']]);
    expect((await verify('pairs')).keys).toEqual([['7', 'b1007']]);
    await inSink(`DELETE FROM public.dated WHERE day = '2024-01-05' AND amount = -7.50`);
    expect((await verify('dated')).keys).toEqual([['2024-01-05', '-7.50']]);
    expect((await verify('things')).keys).toEqual([[uuid]]);
  });
});
