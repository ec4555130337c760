import { Readable } from 'node:stream';
import mysql, { type Connection } from 'mysql2/promise';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { TableSchema } from '../../src/core/change.js';
import { createTableSql, qualifiedName, quoteIdent } from '../../src/sinks/mysql/ddl.js';
import { SESSION_SQL } from '../../src/sinks/mysql/session.js';
import { binaryCollation } from '../../src/sinks/mysql/target-tables.js';
import { readTableSchemas } from '../../src/source/postgres/catalog.js';
import { backlogUpdatedId, type ReferenceInput, type SinkReference } from '../sink-reference.js';
import { runTag } from '../sink-target.js';
import { SNAPSHOT_TABLE } from '../snapshot-table.js';
import { MYSQL_ADMIN } from '../sql-targets.js';

/** The name the statement gives its client-side stream; the server may ask for no other. */
const STREAM_NAME = 'rows';

/**
 * The rows of `sql` as text that LOAD DATA reads with its defaults (tab-separated, backslash
 * escapes, `\N` for NULL, one line a row), `c` as UTC text: PostgreSQL's COPY text is that form.
 */
async function copyRows(url: string, sql: string): Promise<Buffer> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of client.query(copyTo(`COPY (${sql}) TO STDOUT`))) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  } finally {
    await client.end();
  }
}

const SELECT_ROWS = `SELECT id, a, b, to_char(c AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), d FROM ${SNAPSHOT_TABLE}`;

/**
 * MariaDB's own bulk load: `LOAD DATA LOCAL INFILE` from a stream this process writes (never a
 * file), into a table of a fresh database made with the sink's own DDL, in a session set as the
 * sink's (strict, UTC) and committed under the server's durability settings, as the sink's are.
 */
export function mysqlReference(): SinkReference {
  const database = `sinks_ref_${runTag()}`;
  let db: Connection | undefined;
  let schema: TableSchema | undefined;
  let rows: Buffer | undefined;

  const connect = async (): Promise<Connection> => {
    if (db) return db;
    const conn = await mysql.createConnection({ ...MYSQL_ADMIN, charset: 'utf8mb4' });
    await conn.query(SESSION_SQL);
    db = conn;
    return conn;
  };
  const target = () => ({ schema: database, table: (schema as TableSchema).table });
  const load = async (replace: boolean) => {
    const conn = await connect();
    const data = rows;
    if (!data || !schema) throw new Error('the mysql reference loads only what it prepared');
    const columns = schema.columns.map((c) => quoteIdent(c.name)).join(', ');
    await conn.query({
      sql: `LOAD DATA LOCAL INFILE '${STREAM_NAME}' ${replace ? 'REPLACE ' : ''}INTO TABLE ${qualifiedName(target())} CHARACTER SET utf8mb4 (${columns})`,
      infileStreamFactory: (name: string) => {
        if (name !== STREAM_NAME) throw new Error(`the server asked for ${JSON.stringify(name)}`);
        return Readable.from(chunksOf(data));
      },
    });
  };

  return {
    method:
      'LOAD DATA LOCAL INFILE of the rows as tab-separated text from a client-side stream, into a fresh table made with the sink DDL (one autocommit statement); the drain: LOAD DATA LOCAL INFILE REPLACE of the backlog rows as they are at its end (each updated row and each inserted row once) into that table, one statement',
    async prepareSnapshot(input: ReferenceInput) {
      const client = new pg.Client({ connectionString: input.snapshotUrl });
      await client.connect();
      try {
        const [schemaTable, tableName] = SNAPSHOT_TABLE.split('.') as [string, string];
        [schema] = await readTableSchemas(client, [{ schema: schemaTable, table: tableName }]);
      } finally {
        await client.end();
      }
      rows = await copyRows(input.snapshotUrl, `${SELECT_ROWS} ORDER BY id`);
      const conn = await connect();
      await conn.query(`CREATE DATABASE ${quoteIdent(database)} CHARACTER SET utf8mb4`);
      await conn.query(createTableSql(target(), schema as TableSchema, await binaryCollation(conn)));
    },
    loadSnapshot: () => load(false),
    async prepareDrain(input: ReferenceInput) {
      const { shape } = input;
      const updated = Array.from({ length: shape.transactions }, (_, i) => backlogUpdatedId(shape, i + 1));
      rows = await copyRows(
        input.backlogUrl,
        `${SELECT_ROWS} WHERE id = ANY('{${updated.join(',')}}'::bigint[]) OR id > ${shape.rows} ORDER BY id`,
      );
      const lines = rows.reduce((n, byte) => n + (byte === 10 ? 1 : 0), 0);
      if (lines !== 2 * shape.transactions)
        throw new Error(`the backlog has ${lines} rows to load, expected ${2 * shape.transactions}`);
    },
    loadDrain: () => load(true),
    async cleanUp() {
      rows = undefined;
      const conn = db;
      db = undefined;
      if (!conn) return;
      // A load that failed may have closed its connection: the database is dropped on a new one,
      // and the load's own error is the one the run reports.
      await conn.end().catch(() => undefined);
      const admin = await mysql.createConnection({ ...MYSQL_ADMIN });
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)}`);
      } finally {
        await admin.end();
      }
    },
  };
}

/** The rows in pieces of 64 KiB: mysql2 sends a chunk as one packet, bounded by max_allowed_packet. */
function* chunksOf(data: Buffer): Generator<Buffer> {
  for (let at = 0; at < data.length; at += 65_536) yield data.subarray(at, at + 65_536);
}
