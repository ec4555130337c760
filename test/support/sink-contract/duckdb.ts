import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { duckdbConnectionType } from '../../../src/connections/duckdb-connection-type.js';
import { NO_LOCAL_ACCESS } from '../../../src/connections/local-access.js';
import type { TableSchema } from '../../../src/core/change.js';
import { createDuckdbSink } from '../../../src/sinks/duckdb/duckdb-sink.js';
import { acquireInstance, releaseInstance } from '../../../src/sinks/duckdb/instances.js';
import { memorySinkState } from '../memory-sink-state.js';
import type { ContractKind } from './contract-kind.js';
import { normalisedRows } from './normalised-rows.js';

/** The DuckDB sink: one directory for the file, one database file per pipeline. */
export const duckdbContract: ContractKind = {
  name: 'duckdb',
  cannot: {
    messageIds: 'a DuckDB sink writes rows, not messages',
  },
  async start() {
    const root = await mkdtemp(join(tmpdir(), 'duckdb-contract-'));
    const policy = { ...NO_LOCAL_ACCESS, dataDir: root, duckdbDirs: [root] };
    return {
      async pipeline() {
        const pipelineId = randomUUID();
        const settings = await duckdbConnectionType.settings(
          `duckdb:${pipelineId}.duckdb`,
          { tls: {} },
          policy,
        );
        return {
          async open(tables) {
            const sink = createDuckdbSink({
              pipelineId,
              connection: settings,
              properties: {},
              state: memorySinkState(),
            });
            await sink.open(tables);
            return sink;
          },
          async rows(table: TableSchema) {
            const instance = await acquireInstance(settings.path);
            const conn = await instance.connect();
            try {
              const list = table.columns.map((c) => `CAST("${c.name}" AS VARCHAR) AS "${c.name}"`).join(', ');
              const reader = await conn.runAndReadAll(
                `SELECT ${list} FROM "${table.schema}"."${table.table}"`,
              );
              return normalisedRows(table, reader.getRowObjectsJS());
            } finally {
              conn.closeSync();
              await releaseInstance(settings.path);
            }
          },
        };
      },
      async stop() {
        await rm(root, { recursive: true, force: true });
      },
    };
  },
};
