import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { pgClientConfigOfDsn } from '../../../src/connections/pg-client-config.js';
import type { Row, TableSchema } from '../../../src/core/change.js';
import { createPostgresSink } from '../../../src/sinks/postgres/postgres-sink.js';
import { memorySinkState } from '../memory-sink-state.js';
import { createDatabase } from '../pg-cluster.js';
import type { ContractKind } from './contract-kind.js';
import { normalisedRows } from './normalised-rows.js';

const q = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The PostgreSQL sink on one cluster: one database for the file, one target schema per pipeline. */
export const postgresContract = (cluster: { label: string; adminUrl: string }): ContractKind => ({
  name: `postgres on ${cluster.label}`,
  cannot: {
    // The runtime never writes a done partition again: it skips the ones the sink reports done.
    rewritesDonePartition: 'a snapshot is loaded without the primary key, built once at its end',
    messageIds: 'a PostgreSQL sink writes rows, not messages',
  },
  async start() {
    const url = await createDatabase(cluster.adminUrl, 'sink_contract_pg');
    const connection = await pgClientConfigOfDsn(url);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    return {
      async pipeline() {
        const pipelineId = randomUUID();
        const schema = `contract_${randomBytes(4).toString('hex')}`;
        return {
          async open(tables) {
            const sink = createPostgresSink({
              pipelineId,
              connection,
              properties: { target_schema: schema },
              state: memorySinkState(),
            });
            await sink.open(tables);
            return sink;
          },
          async rows(table: TableSchema) {
            const text = `SELECT * FROM ${q(schema)}.${q(table.table)}`;
            const { rows } = await db.query<Row>({ text, types: { getTypeParser: () => (v: string) => v } });
            return normalisedRows(table, rows);
          },
        };
      },
      async stop() {
        await db.end();
      },
    };
  },
});
