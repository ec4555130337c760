import { randomBytes, randomUUID } from 'node:crypto';
import mysql, { type Connection } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { TableSchema } from '../../src/core/change.js';
import type { Sink } from '../../src/core/sink.js';
import type { SinkComparison } from '../../src/core/table-comparison.js';
import { mysqlConnectionOptions } from '../../src/sinks/mysql/mysql-connection-type.js';
import { parseMysqlDsn } from '../../src/sinks/mysql/mysql-dsn.js';
import { createMysqlSink } from '../../src/sinks/mysql/mysql-sink.js';
import type { VerifyLimits } from '../../src/verify/table-verifier.js';
import { memorySinkState } from '../support/memory-sink-state.js';
import { createDatabase } from '../support/pg-cluster.js';
import { sqlOn } from '../support/replication-fixture.js';
import { copyIntoSink, seedSource, VERIFY_TABLES, verifyTable } from '../support/verify-fixture.js';

const ADMIN = { host: '127.0.0.1', port: 3306, user: 'root', password: '' };

describe('comparing a table between a PostgreSQL source and a MySQL sink', () => {
  const { adminUrl } = inject('pgClusters')[0] as { adminUrl: string };
  const prefix = `tvm_${randomBytes(4).toString('hex')}`;
  const database = prefix;
  let source: string;
  let shapes: Map<string, TableSchema>;
  let sink: Sink;
  let side: SinkComparison;
  let admin: Connection;

  beforeAll(async () => {
    source = await createDatabase(adminUrl, `${prefix}_src`);
    shapes = await seedSource(source);
    admin = await mysql.createConnection({ ...ADMIN, multipleStatements: true });
    await admin.query(`CREATE DATABASE \`${database}\``);
    sink = createMysqlSink({
      pipelineId: randomUUID(),
      connection: mysqlConnectionOptions(parseMysqlDsn(`mysql://root@127.0.0.1:3306/${database}`), {
        tls: {},
      }),
      properties: {},
      state: memorySinkState(),
    });
    await sink.open([...shapes.values()]);
    await copyIntoSink(source, sink, shapes);
    side = await (sink.comparison as () => Promise<SinkComparison>).call(sink);
  });

  afterAll(async () => {
    await sink?.close();
    await admin?.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await admin?.end();
    await sqlOn(adminUrl, `DROP DATABASE IF EXISTS ${prefix}_src WITH (FORCE)`);
  });

  const verify = (table: string, limits: Partial<VerifyLimits> = {}) =>
    verifyTable(source, side, shapes.get(table) as TableSchema, limits);
  const inSink = (sql: string) => admin.query(`USE \`${database}\`; ${sql}`);

  it('finds the tables the sink wrote equal, every column but the float compared', async () => {
    for (const t of VERIFY_TABLES) {
      const { verdict } = await verify(t);
      expect(verdict, t).toMatchObject({ status: 'matched', missing: 0, extra: 0, changed: 0 });
      expect(
        verdict.columns_not_verified.map((c) => c.column),
        t,
      ).toEqual(t === 'items' ? ['ratio'] : []);
      expect(verdict.source_rows).toBe(verdict.sink_rows);
    }
  });

  it('finds rows changed, deleted and added in the sink, by key', async () => {
    await inSink(
      `UPDATE items SET price = price + 0.01 WHERE id IN (7, 15001);
      UPDATE items SET code = 'c7   ' WHERE id = 29999; DELETE FROM items WHERE id = 20000;
      INSERT INTO items (id, name) VALUES (40000, 'stray'); UPDATE items SET name = NULL WHERE id = 3;
      UPDATE items SET clock = '00:00:00' WHERE id = 1; UPDATE items SET doc = '{"i":11}' WHERE id = 11;
      UPDATE items SET at = DATE_ADD(at, INTERVAL 1 MICROSECOND) WHERE id = 13;`,
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
    await inSink(
      `UPDATE words SET n = -1 WHERE word = 'w3000Z'; DELETE FROM pairs WHERE a = 7 AND b = 'b1007';
      UPDATE things SET v = 0 WHERE id = '${(await sqlOn(source, `SELECT md5('2500')::uuid::text AS u`))[0].u}';`,
    );
    expect((await verify('words')).keys).toEqual([['w3000Z']]);
    expect((await verify('pairs')).keys).toEqual([['7', 'b1007']]);
    await inSink(`DELETE FROM dated WHERE day = '2024-01-05' AND amount = -7.50`);
    expect((await verify('dated')).keys).toEqual([['2024-01-05', '-7.50']]);
    expect((await verify('things')).keys).toEqual([
      [(await sqlOn(source, `SELECT md5('2500')::uuid::text AS u`))[0].u],
    ]);
  });
});
