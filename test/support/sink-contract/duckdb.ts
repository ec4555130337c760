import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NO_LOCAL_ACCESS } from '../../../src/connections/local-access.js';
import type { TableSchema } from '../../../src/core/change.js';
import { duckdbConnectionType } from '../../../src/sinks/duckdb/duckdb-connection-type.js';
import { createDuckdbSink } from '../../../src/sinks/duckdb/duckdb-sink.js';
import { acquireInstance, releaseInstance } from '../../../src/sinks/duckdb/instances.js';
import { memorySinkState } from '../memory-sink-state.js';
import type { ContractKind } from './contract-kind.js';
import { normalisedRows } from './normalised-rows.js';

/** The DuckDB sink: one database file for the test file, target schemas of their own per pipeline. */
export const duckdbContract: ContractKind = {
  name: 'duckdb',
  cannot: {
    messageIds: 'a DuckDB sink writes rows, not messages',
  },
  async start() {
    const root = await mkdtemp(join(tmpdir(), 'duckdb-contract-'));
    const policy = { ...NO_LOCAL_ACCESS, dataDir: root, duckdbDirs: [root] };
    const settings = await duckdbConnectionType.settings('duckdb:contract.duckdb', { tls: {} }, policy);
    // Held for the whole file, so that the file is not opened again for every sink.
    const held = await acquireInstance(settings.path);
    return {
      async pipeline() {
        const pipelineId = randomUUID();
        const schemaPrefix = `p${pipelineId.slice(0, 8)}`;
        const properties = { table_id: `${schemaPrefix}_{schema}.{table}` };
        return {
          async open(tables) {
            const sink = createDuckdbSink({
              pipelineId,
              connection: settings,
              properties,
              state: memorySinkState(),
            });
            await sink.open(tables);
            return sink;
          },
          async rows(table: TableSchema) {
            const conn = await held.connect();
            try {
              const list = table.columns.map((c) => `CAST("${c.name}" AS VARCHAR) AS "${c.name}"`).join(', ');
              const reader = await conn.runAndReadAll(
                `SELECT ${list} FROM "${schemaPrefix}_${table.schema}"."${table.table}"`,
              );
              return normalisedRows(table, reader.getRowObjectsJS());
            } finally {
              conn.closeSync();
            }
          },
        };
      },
      async stop() {
        await releaseInstance(settings.path);
        await rm(root, { recursive: true, force: true });
      },
    };
  },
};
