import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { acquireInstance, releaseInstance } from '../src/sinks/duckdb/instances.js';
import { type Digest, type RunShape, runTag, type SinkTarget } from './sink-target.js';
import { SNAPSHOT_TABLE } from './snapshot-table.js';
import { digestCheck, drainedFrom, markerIds } from './sql-targets.js';

const [schema, table] = SNAPSHOT_TABLE.split('.') as [string, string];

/**
 * The source digest of a DuckDB table: DuckDB builds each row's text `id|a|b|c|d` as PostgreSQL
 * does (`c` in UTC with microseconds, `d` with its two decimals), and the md5 sums are made here.
 */
async function duckdbDigest(db: DuckDBConnection): Promise<Digest> {
  const reader = await db.runAndReadAll(
    `SELECT concat_ws('|', id, a, b, strftime(c AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S.%f'), d) AS line
       FROM "${schema}"."${table}"`,
  );
  let sum = 0n;
  const rows = reader.getRows();
  for (const [line] of rows) {
    sum += BigInt(`0x${createHash('md5').update(String(line)).digest('hex').slice(0, 8)}`);
  }
  return { rows: rows.length, sum: String(sum) };
}

/**
 * A database file of the run's own, `bench-<random>.duckdb`, under the service's data directory
 * (where a relative DuckDB DSN lives); the pipeline creates the table in it. The benchmark reads
 * it through the service's own instance of the file (DuckDB lets one process open a file once),
 * on a connection of its own. Drain polls as for the SQL sinks: the backlog's first and last rows.
 */
export async function duckdbTarget(shape: RunShape, dataDir: string): Promise<SinkTarget> {
  const file = `bench-${runTag()}.duckdb`;
  let opened: { path: string; db: DuckDBConnection } | undefined;
  // The sink makes the directory and opens the file when the pipeline starts: the same path, resolved.
  const db = async () => {
    if (!opened) {
      const path = join(realpathSync(join(dataDir, 'duckdb')), file);
      opened = { path, db: await (await acquireInstance(path)).connect() };
    }
    return opened.db;
  };
  const check = digestCheck(async () => duckdbDigest(await db()));
  return {
    kind: 'duckdb',
    dsn: `duckdb:${file}`,
    properties: {},
    where: `file \`<data_dir>/duckdb/${file}\`, table \`${SNAPSHOT_TABLE}\``,
    checkSnapshot: check,
    markDrainStart: async () => {},
    drainedChanges: async () => {
      const reader = await (await db()).runAndReadAll(
        `SELECT id FROM "${schema}"."${table}" WHERE id IN (${markerIds(shape)})`,
      );
      return drainedFrom(
        reader.getRows().map(([id]) => id),
        shape,
      );
    },
    checkDrain: check,
    cleanUp: async () => {
      if (!opened) return;
      opened.db.closeSync();
      await releaseInstance(opened.path);
      await rm(opened.path, { force: true });
      await rm(`${opened.path}.wal`, { force: true });
    },
  };
}
