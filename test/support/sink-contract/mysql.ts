import { randomBytes, randomUUID } from 'node:crypto';
import mysql, { type RowDataPacket } from 'mysql2/promise';
import type { TableSchema } from '../../../src/core/change.js';
import { mysqlConnectionOptions } from '../../../src/sinks/mysql/mysql-connection-type.js';
import { parseMysqlDsn } from '../../../src/sinks/mysql/mysql-dsn.js';
import { createMysqlSink } from '../../../src/sinks/mysql/mysql-sink.js';
import { memorySinkState } from '../memory-sink-state.js';
import type { ContractKind } from './contract-kind.js';
import { normalisedRows } from './normalised-rows.js';

const ADMIN = { host: '127.0.0.1', port: 3306, user: 'root', password: '' };

/** The MySQL sink on the local MariaDB: one database for the file, table names of their own per pipeline. */
export const mysqlContract: ContractKind = {
  name: 'mysql',
  cannot: {
    messageIds: 'a MySQL sink writes rows, not messages',
  },
  async start() {
    const database = `contract_${randomBytes(6).toString('hex')}`;
    const admin = await mysql.createConnection({
      ...ADMIN,
      dateStrings: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
    await admin.query(`CREATE DATABASE \`${database}\``);
    const connection = mysqlConnectionOptions(parseMysqlDsn(`mysql://root@127.0.0.1:3306/${database}`), {
      tls: {},
    });
    return {
      async pipeline() {
        const pipelineId = randomUUID();
        const prefix = `p${randomBytes(4).toString('hex')}`;
        const target = (table: { schema: string; table: string }) =>
          `${prefix}_${table.schema}_${table.table}`;
        return {
          async open(tables) {
            const properties = Object.fromEntries(
              tables.map((t) => [`table.${t.schema}.${t.table}`, target(t)]),
            );
            const sink = createMysqlSink({ pipelineId, connection, properties, state: memorySinkState() });
            await sink.open(tables);
            return sink;
          },
          async rows(table: TableSchema) {
            const [rows] = await admin.query<RowDataPacket[]>(
              `SELECT * FROM \`${database}\`.\`${target(table)}\``,
            );
            return normalisedRows(table, rows);
          },
        };
      },
      async stop() {
        await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
        await admin.end();
      },
    };
  },
};
