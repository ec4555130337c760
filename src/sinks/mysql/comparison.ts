import { escape as escapeLiteral } from 'mysql2';
import mysql, { type Connection, type ConnectionOptions, type RowDataPacket } from 'mysql2/promise';
import type { ColumnSchema, TableRef } from '../../core/change.js';
import type {
  ComparedKey,
  ComparedValue,
  ComparisonDialect,
  ComparisonReader,
  NotCompared,
  SinkComparison,
} from '../../core/table-comparison.js';
import { mysqlTypeOf } from './column-types.js';
import { qualifiedName, quoteIdent } from './ddl.js';
import { binaryCollation } from './target-tables.js';

/**
 * The reading session: UTC like the writers, and an explicit sql_mode so that the server's
 * default cannot turn on NO_BACKSLASH_ESCAPES (mysql2's `escape` writes backslashes) or ANSI_QUOTES.
 */
const SESSION_SQL = "SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'";

const CONNECT_TIMEOUT_MS = 10_000;

/**
 * MySQL's side. Every part of a row's text is made binary before it is joined: the parts carry
 * different collations (the connection's for a CAST, the table's for a column), which CONCAT_WS
 * refuses to mix; as bytes they are the utf8mb4 text, which is what PostgreSQL hashes.
 */
export const mysqlComparisonDialect: ComparisonDialect = {
  table: (ref) => qualifiedName(ref),
  ident: (name) => quoteIdent(name),
  tagged: (column, value) => `IF(${column} IS NULL, 'N', CONCAT('V', ${value}))`,
  rowMd5: (parts) => `MD5(CONCAT_WS(CHAR(31), ${parts.map((p) => `CAST(${p} AS BINARY)`).join(', ')}))`,
  md5Prefix: (md5) => `CAST(CONV(SUBSTRING(${md5}, 1, 15), 16, 10) AS UNSIGNED)`,
};

/** What the server is, as it bears on comparing: read once when the comparison is made. */
export interface MysqlServerTraits {
  /** MariaDB keeps JSON as the text written; MySQL stores it parsed and prints it normalised. */
  mariadb: boolean;
  /** Whether the sink's binary collation pads (`utf8mb4_bin`): `a` = `a ` then, unlike the source. */
  padding: boolean;
}

const FLOAT_REASON = 'floating-point values are spelled differently by MySQL and PostgreSQL';

/** How a stored value of a source column compares, from the MySQL type the sink gives it. */
export function mysqlComparedValue(
  column: ColumnSchema,
  traits: MysqlServerTraits,
): ComparedValue | NotCompared {
  const c = quoteIdent(column.name);
  const type = mysqlTypeOf({ typeName: column.typeName, isKey: false });
  if (/^(?:SMALLINT|INT|BIGINT|INT UNSIGNED|DECIMAL\(\d+,\d+\))$/.test(type))
    return { form: 'text', sql: `CAST(${c} AS CHAR)` };
  switch (type) {
    case 'TINYINT(1)':
      return { form: 'bool01', sql: `CAST(${c} AS CHAR)` };
    case 'FLOAT':
    case 'DOUBLE':
      return { reason: FLOAT_REASON };
    case 'JSON':
      return traits.mariadb
        ? { form: 'text', sql: c }
        : { reason: 'MySQL stores JSON parsed and prints it normalised, not as the source wrote it' };
    case 'LONGBLOB':
      return { form: 'hex', sql: `LOWER(HEX(${c}))` };
    case 'DATE':
      return { form: 'text', sql: `CAST(${c} AS CHAR)` };
  }
  if (type.startsWith('TIME(')) return { form: 'time_us', sql: `TIME_FORMAT(${c}, '%H:%i:%s.%f')` };
  if (type.startsWith('DATETIME('))
    return { form: 'timestamp_us', sql: `DATE_FORMAT(${c}, '%Y-%m-%d %H:%i:%s.%f')` };
  // CHAR(36) uuids, VARCHAR and LONGTEXT: the source's text as written (char(n) with its padding).
  return { form: 'text', sql: c };
}

/** Source types whose order at the source (`COLLATE "C"`) is the byte order of their text. */
const TEXT_KEY = /^(?:text|name|character varying(?:\(\d+\))?|uuid)$/;
const INTEGER_KEY = /^(?:smallint|integer|bigint|oid)$/;
const NUMERIC_KEY = /^numeric\((\d+),(\d+)\)$/;

/** How a key column compares, in the order the source's keys have. */
export function mysqlComparedKey(column: ColumnSchema, traits: MysqlServerTraits): ComparedKey | NotCompared {
  const c = quoteIdent(column.name);
  const type = mysqlTypeOf({ typeName: column.typeName, isKey: true });
  if (INTEGER_KEY.test(column.typeName)) {
    return { sql: `CAST(${c} AS CHAR)`, order: c, literal: (text) => integerLiteral(text, column.name) };
  }
  if (column.typeName === 'date') {
    return { sql: `CAST(${c} AS CHAR)`, order: c, literal: (text) => `CAST(${escapeLiteral(text)} AS DATE)` };
  }
  const numeric = NUMERIC_KEY.exec(column.typeName);
  if (numeric && type.startsWith('DECIMAL(')) {
    return {
      sql: `CAST(${c} AS CHAR)`,
      order: c,
      literal: (text) => `CAST(${escapeLiteral(text)} AS DECIMAL(${numeric[1]},${numeric[2]}))`,
    };
  }
  if (TEXT_KEY.test(column.typeName)) {
    // The table's collation is binary; a padding one would make `a` and `a ` equal: bytes, then.
    if (traits.padding) {
      return {
        sql: c,
        order: `CAST(${c} AS BINARY)`,
        literal: (text) => `CAST(${escapeLiteral(text)} AS BINARY)`,
      };
    }
    return { sql: c, order: c, literal: (text) => escapeLiteral(text) };
  }
  if (column.typeName.startsWith('character(')) {
    return { reason: 'character(n) keys are ordered without their padding at the source, with it in MySQL' };
  }
  return { reason: `a ${column.typeName} key has no order shared by MySQL and PostgreSQL` };
}

function integerLiteral(text: string, column: string): string {
  if (!/^-?\d+$/.test(text))
    throw new Error(`key column ${JSON.stringify(column)}: ${JSON.stringify(text)} is not an integer`);
  return text;
}

/** A connection of the comparison's own, apart from the sink's writing pool. */
async function connect(connection: ConnectionOptions): Promise<Connection> {
  const conn = await mysql.createConnection({
    ...connection,
    connectTimeout: connection.connectTimeout ?? CONNECT_TIMEOUT_MS,
    // Values as the server prints them, never JavaScript numbers or dates.
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    charset: 'utf8mb4',
    multipleStatements: false,
    flags: ['-LOCAL_FILES'],
  });
  // A dropped connection surfaces on its next query; it must not crash the process.
  conn.on('error', () => {});
  try {
    await conn.query(SESSION_SQL);
  } catch (error) {
    conn.destroy();
    throw error;
  }
  return conn;
}

/** A reading session, every value read back as text (null stays null). */
function reader(conn: Connection): ComparisonReader {
  return {
    query: async (sql) => {
      const [rows] = await conn.query({ sql, rowsAsArray: true });
      return (rows as unknown[][]).map((row) => row.map((v) => (v === null ? null : String(v))));
    },
    close: () => conn.end().catch(() => undefined),
  };
}

/** The server's traits, read once. */
async function serverTraits(connection: ConnectionOptions): Promise<MysqlServerTraits> {
  const conn = await connect(connection);
  try {
    const [rows] = await conn.query<RowDataPacket[]>('SELECT VERSION() AS version');
    const collation = await binaryCollation(conn);
    return { mariadb: /mariadb/i.test(String(rows[0]?.version ?? '')), padding: collation === 'utf8mb4_bin' };
  } finally {
    await conn.end().catch(() => undefined);
  }
}

/**
 * A MySQL or MariaDB sink keeps most columns in a type of its own (see `column-types.ts`): each
 * is printed in a form both servers spell alike, or listed as not verified.
 */
export async function mysqlComparison(
  connection: ConnectionOptions,
  target: (table: TableRef) => TableRef,
): Promise<SinkComparison> {
  const traits = await serverTraits(connection);
  return {
    dialect: mysqlComparisonDialect,
    target,
    column: (column) => mysqlComparedValue(column, traits),
    key: (column) => mysqlComparedKey(column, traits),
    open: async () => reader(await connect(connection)),
  };
}
