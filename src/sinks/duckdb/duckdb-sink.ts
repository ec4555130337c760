import type { Readable } from 'node:stream';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { type Checkpoint, type Row, type TableRef, type TableSchema, tableKey } from '../../core/change.js';
import { formatLsn, parseLsn } from '../../core/lsn.js';
import type { SchemaChangeItem } from '../../core/schema-diff.js';
import {
  type ChangeBatch,
  FencedError,
  type Sink,
  type SinkContext,
  type SnapshotPartition,
  type TargetState,
} from '../../core/sink.js';
import { ValueError } from '../../core/values.js';
import { RefusedChangeError } from '../refused-change.js';
import { partitionsOfMarkers } from '../snapshot-partitions.js';
import { inTransaction, type TransactionDriver } from '../sql-transaction.js';
import { tableRefKey } from '../table-ref-key.js';
import { refuseSharedTargets } from '../target-names.js';
import { planBatch, type Step } from './apply-plan.js';
import { type DuckdbColumn, duckdbColumnOf } from './column-types.js';
import { duckdbComparison } from './comparison.js';
import { type DuckdbSinkConfig, duckdbTargetOf, parseDuckdbSinkProperties, targetKey } from './config.js';
import {
  BOOKKEEPING_SQL,
  CHECKPOINTS,
  createTableSql,
  PARTITIONS,
  qualifiedName,
  quoteIdent,
} from './ddl.js';
import type { DuckdbSettings } from './duckdb-connection-type.js';
import { acquireInstance, releaseInstance } from './instances.js';
import { alreadyDoneCheck, schemaChangeSql } from './schema-change.js';
import { loadPartitionText } from './snapshot-load.js';

/** The temporary table a step's rows are appended to before one statement writes them. */
const STAGE = 'temp.main."_replicator_stage"';

/** A source table as the sink writes it. */
interface TargetTable {
  source: TableSchema;
  target: TableRef;
  columns: Map<string, DuckdbColumn>;
}

export function createDuckdbSink(ctx: SinkContext<DuckdbSettings>): Sink {
  return new DuckdbSink(ctx, parseDuckdbSinkProperties(ctx.properties));
}

/**
 * A sink writing into a DuckDB file: rows are appended to a staging table, then written by a few
 * set statements; each batch is one transaction with its checkpoint and a fencing check, each
 * snapshot partition one with its marker. A DuckDB connection runs one transaction at a time, so
 * the sink's calls on its connection take turns; snapshot partitions have connections of their own.
 */
class DuckdbSink implements Sink {
  private instance: DuckDBInstance | undefined;
  private conn: DuckDBConnection | undefined;
  private readonly tables = new Map<string, TargetTable>();
  private turn: Promise<unknown> = Promise.resolve();
  /** Snapshot partitions being written, each on its own connection: closing waits for them. */
  private readonly partitions = new Set<Promise<unknown>>();
  private closed = false;

  constructor(
    private readonly ctx: SinkContext<DuckdbSettings>,
    private readonly config: DuckdbSinkConfig,
  ) {}

  private targetOf(source: TableRef): TableRef {
    return duckdbTargetOf(this.config, source);
  }

  /** Runs `work` when the sink's previous call is done. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.turn.then(work, work);
    this.turn = run.catch(() => undefined);
    return run;
  }

  private connection(): DuckDBConnection {
    if (!this.conn)
      throw new Error(this.closed ? 'the duckdb sink is closed' : 'the duckdb sink is not open');
    return this.conn;
  }

  private async connect(): Promise<void> {
    if (this.instance) return;
    this.closed = false;
    this.instance = await acquireInstance(this.ctx.connection.path);
    try {
      this.conn = await this.instance.connect();
    } catch (error) {
      this.instance = undefined;
      await releaseInstance(this.ctx.connection.path);
      throw error;
    }
  }

  async inspectTargets(tables: readonly TableSchema[]): Promise<TargetState[]> {
    if (tables.length === 0) return [];
    await this.connect();
    return this.exclusive(async () => {
      const conn = this.connection();
      const states: TargetState[] = [];
      for (const source of tables) {
        const target = this.targetOf(source);
        const present = await this.columnsOf(conn, target);
        // A table has at least one column: none found is no table.
        if (present.size === 0) {
          states.push({ table: source, target, exists: false, missingColumns: [], empty: false });
          continue;
        }
        const reader = await conn.runAndReadAll(`SELECT NOT EXISTS (SELECT 1 FROM ${qualifiedName(target)})`);
        states.push({
          table: source,
          target,
          exists: true,
          missingColumns: source.columns.map((c) => c.name).filter((n) => !present.has(n.toLowerCase())),
          empty: reader.getRowsJS()[0]?.[0] === true,
        });
      }
      return states;
    });
  }

  async open(tables: TableSchema[]): Promise<void> {
    refuseSharedTargets(tables, (source) => this.targetOf(source), targetKey);
    await this.connect();
    await this.exclusive(async () => {
      await this.transaction(async (conn) => {
        for (const sql of BOOKKEEPING_SQL) await conn.run(sql);
        for (const source of tables)
          this.tables.set(tableRefKey(source), await this.prepareTarget(conn, source));
      });
    });
  }

  /** Creates the target of `source` when missing, else checks it has every source column. */
  private async prepareTarget(conn: DuckDBConnection, source: TableSchema): Promise<TargetTable> {
    if (source.keyColumns.length === 0) throw new Error(`${tableKey(source)} has no key columns`);
    const target = this.targetOf(source);
    const columns = new Map(source.columns.map((c) => [c.name, duckdbColumnOf(c)]));
    await conn.run(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(target.schema)}`);
    await conn.run(
      createTableSql(
        target,
        source.columns.map((c) => ({
          column: columns.get(c.name) as DuckdbColumn,
          notNull: source.keyColumns.includes(c.name) || !c.nullable,
        })),
        source.keyColumns,
      ),
    );
    const present = await this.columnsOf(conn, target);
    const missing = source.columns.map((c) => c.name).filter((n) => !present.has(n.toLowerCase()));
    if (missing.length > 0) {
      throw new Error(
        `target table ${tableKey(target)} lacks the columns ${JSON.stringify(missing)} of ${tableKey(source)}`,
      );
    }
    return { source, target, columns };
  }

  /** The column names of a table, lower-cased as DuckDB compares them. */
  private async columnsOf(conn: DuckDBConnection, target: TableRef): Promise<Set<string>> {
    const reader = await conn.runAndReadAll(
      'SELECT column_name FROM information_schema.columns WHERE lower(table_schema) = lower($1) AND lower(table_name) = lower($2)',
      [target.schema, target.table],
    );
    return new Set(reader.getRowsJS().map((r) => String(r[0]).toLowerCase()));
  }

  async readCheckpoint(): Promise<Checkpoint | null> {
    return this.exclusive(async () => {
      const reader = await this.connection().runAndReadAll(
        `SELECT lsn, CAST(epoch AS VARCHAR) FROM ${CHECKPOINTS} WHERE pipeline_id = $1`,
        [this.ctx.pipelineId],
      );
      const row = reader.getRowsJS()[0];
      return row ? { lsn: parseLsn(String(row[0])), epoch: Number(row[1]) } : null;
    });
  }

  async snapshotPartitionsDone(): Promise<SnapshotPartition[]> {
    const rows = await this.exclusive(async () => {
      const reader = await this.connection().runAndReadAll(
        `SELECT table_name, partition_id FROM ${PARTITIONS} WHERE pipeline_id = $1 ORDER BY table_name, partition_id`,
        [this.ctx.pipelineId],
      );
      return reader.getRowsJS().map((r) => ({ table_name: String(r[0]), partition_id: String(r[1]) }));
    });
    return partitionsOfMarkers(
      rows,
      [...this.tables.values()].map((t) => t.source),
    );
  }

  async resetTable(table: TableSchema): Promise<void> {
    const target = this.tableOf(table);
    await this.exclusive(() =>
      this.transaction(async (conn) => {
        await conn.run(`DELETE FROM ${PARTITIONS} WHERE pipeline_id = $1 AND table_name = $2`, [
          this.ctx.pipelineId,
          tableKey(table),
        ]);
        await conn.run(`DELETE FROM ${qualifiedName(target.target)}`);
      }),
    );
  }

  /**
   * Each partition on a connection of its own, so that partitions load side by side: DuckDB runs
   * their transactions concurrently (appends to one table commit optimistically; their keys are
   * disjoint). The rows and the partition's marker commit together.
   */
  async writeSnapshotPartition(
    table: TableSchema,
    partition: SnapshotPartition,
    copyText: Readable,
  ): Promise<number> {
    const target = this.tableOf(table);
    const instance = this.instance;
    if (!instance || this.closed)
      throw new Error(this.closed ? 'the duckdb sink is closed' : 'the duckdb sink is not open');
    const work = (async () => {
      const conn = await instance.connect();
      try {
        return await inTransaction(connectionDriver(conn), async () => {
          const count = await loadPartitionText(
            conn,
            () => instance.connect(),
            { ...target, columns: table.columns.map((c) => target.columns.get(c.name) as DuckdbColumn) },
            copyText,
          );
          await conn.run(`INSERT OR REPLACE INTO ${PARTITIONS} VALUES ($1, $2, $3, $4, now())`, [
            this.ctx.pipelineId,
            tableKey(table),
            partition.partitionId,
            count,
          ]);
          return count;
        });
      } finally {
        conn.closeSync();
      }
    })();
    this.partitions.add(work);
    try {
      return await work;
    } finally {
      this.partitions.delete(work);
    }
  }

  /** Nothing is left for the end: the primary key index is built as rows come. */
  async finishSnapshot(table: TableRef): Promise<void> {
    this.tableOf(table);
  }

  planSchemaChange(current: TableSchema, changes: readonly SchemaChangeItem[]): string[] {
    return schemaChangeSql(this.targetOf(current), current, changes);
  }

  async applySchemaChange(
    proposed: TableSchema,
    statements: readonly string[],
  ): Promise<{ skipped: string[] }> {
    const skipped: string[] = [];
    const target = this.targetOf(proposed);
    const table = await this.exclusive(() =>
      this.transaction(async (conn) => {
        for (const statement of statements) {
          const done = alreadyDoneCheck(statement);
          if (done?.(await this.columnsOf(conn, target))) {
            skipped.push(statement);
            continue;
          }
          await conn.run(statement);
        }
        return this.prepareTarget(conn, proposed);
      }),
    );
    this.tables.set(tableRefKey(proposed), table);
    return { skipped };
  }

  async applyBatch(batch: ChangeBatch): Promise<void> {
    const steps = planBatch(batch.changes, (ref) => this.tableOf(ref).source);
    return this.exclusive(() =>
      this.transaction(async (conn) => {
        const reader = await conn.runAndReadAll(
          `SELECT CAST(epoch AS VARCHAR) FROM ${CHECKPOINTS} WHERE pipeline_id = $1`,
          [this.ctx.pipelineId],
        );
        const stored = reader.getRowsJS()[0];
        if (stored && Number(stored[0]) > batch.epoch) throw new FencedError(Number(stored[0]), batch.epoch);
        for (const step of steps) await this.runStep(conn, step, this.tableOf(step.table));
        // Written by every batch, so that two writers in one process conflict on this row and one fails.
        await conn.run(
          `INSERT INTO ${CHECKPOINTS} VALUES ($1, $2, $3, now()) ON CONFLICT (pipeline_id) DO UPDATE SET lsn = excluded.lsn, epoch = excluded.epoch, updated_at = excluded.updated_at`,
          [this.ctx.pipelineId, formatLsn(batch.commitLsn), String(batch.epoch)],
        );
      }),
    );
  }

  /** Writes one step: its rows appended to the staging table, then one or two set statements. */
  private async runStep(conn: DuckDBConnection, step: Step, table: TargetTable): Promise<void> {
    const t = qualifiedName(table.target);
    const keys = table.source.keyColumns;
    const col = (name: string) => table.columns.get(name) as DuckdbColumn;
    if (step.op === 'truncate') {
      await conn.run(`DELETE FROM ${t}`);
      return;
    }
    if (step.op === 'delete') {
      const cols = keys.map(col);
      await this.stage(conn, table, cols, step.keys);
      await conn.run(
        `DELETE FROM ${t} WHERE EXISTS (SELECT 1 FROM ${STAGE} s WHERE ${keyMatch(t, cols, 's')})`,
      );
      return;
    }
    if (step.op === 'move') {
      const cols = step.columns.map(col);
      const oldCols = keys.map(col);
      await this.stage(
        conn,
        table,
        [...cols, ...oldCols],
        [{ ...step.row, ...prefixed(step.oldKey) }],
        [...step.columns, ...keys.map((k) => `\u0000old${k}`)],
      );
      const all = table.source.columns.map((c) => c.name);
      const values = all.map((name) => {
        const index = step.columns.indexOf(name);
        return index >= 0 ? col(name).cast(`s.c${index}`) : `o.${quoteIdent(name)}`;
      });
      const oldMatch = oldCols
        .map((c, i) => `o.${quoteIdent(c.name)} = ${c.cast(`s.c${cols.length + i}`)}`)
        .join(' AND ');
      const names = all.map(quoteIdent).join(', ');
      await conn.run(
        `CREATE OR REPLACE TEMP TABLE "_replicator_moved" AS SELECT ${values.map((v, i) => `${v} AS v${i}`).join(', ')} FROM ${t} o, ${STAGE} s WHERE ${oldMatch}`,
      );
      await conn.run(`DELETE FROM ${t} o WHERE EXISTS (SELECT 1 FROM ${STAGE} s WHERE ${oldMatch})`);
      await conn.run(`INSERT OR REPLACE INTO ${t} (${names}) SELECT * FROM temp.main."_replicator_moved"`);
      return;
    }
    const names = step.op === 'replace' ? table.source.columns.map((c) => c.name) : step.columns;
    const cols = names.map(col);
    await this.stage(conn, table, cols, step.rows);
    const select = `SELECT ${cols.map((c, i) => c.cast(`s.c${i}`)).join(', ')} FROM ${STAGE} s`;
    const list = names.map(quoteIdent).join(', ');
    if (step.op === 'replace') {
      const keyCols = keys.map(col);
      const keyAt = keys.map((k) => names.indexOf(k));
      const match = keyCols
        .map((c, i) => `${t}.${quoteIdent(c.name)} = ${c.cast(`s.c${keyAt[i]}`)}`)
        .join(' AND ');
      await conn.run(`DELETE FROM ${t} WHERE EXISTS (SELECT 1 FROM ${STAGE} s WHERE ${match})`);
      await conn.run(`INSERT INTO ${t} (${list}) ${select}`);
      return;
    }
    const sets = names
      .filter((n) => !keys.includes(n))
      .map((n) => `${quoteIdent(n)} = excluded.${quoteIdent(n)}`);
    const action = sets.length > 0 ? `DO UPDATE SET ${sets.join(', ')}` : 'DO NOTHING';
    await conn.run(
      `INSERT INTO ${t} (${list}) ${select} ON CONFLICT (${keys.map(quoteIdent).join(', ')}) ${action}`,
    );
  }

  /**
   * Appends rows to a fresh staging table, one VARCHAR column per written column (`c0`, `c1`, …)
   * and their number (`n`), then finds a value DuckDB could not cast before it is written: a
   * RefusedChangeError naming the table and the row's key, rather than a failed batch retried.
   */
  private async stage(
    conn: DuckDBConnection,
    table: TargetTable,
    columns: readonly DuckdbColumn[],
    rows: readonly Row[],
    names: readonly string[] = columns.map((c) => c.name),
  ): Promise<void> {
    const defs = columns.map((_, i) => `c${i} VARCHAR`).join(', ');
    await conn.run(`CREATE OR REPLACE TEMP TABLE "_replicator_stage" (n INTEGER, ${defs})`);
    const appender = await conn.createAppender('_replicator_stage', null, 'temp');
    try {
      for (const [n, row] of rows.entries()) {
        appender.appendInteger(n);
        for (const [i, column] of columns.entries()) {
          const text = row[names[i] as string] ?? null;
          if (text === null) {
            appender.appendNull();
            continue;
          }
          try {
            appender.appendVarchar(column.stage(text));
          } catch (error) {
            if (!(error instanceof ValueError)) throw error;
            throw new RefusedChangeError(
              table.source,
              keyOf(table, row),
              `${column.name}: ${error.message}`,
              {
                cause: error,
              },
            );
          }
        }
        appender.endRow();
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
    const failing = columns.map((c, i) => `(c${i} IS NOT NULL AND ${c.cast(`c${i}`, true)} IS NULL)`);
    const reader = await conn.runAndReadAll(
      `SELECT n, ${failing.map((f, i) => `${f} AS f${i}`).join(', ')} FROM ${STAGE} WHERE ${failing.join(' OR ')} ORDER BY n LIMIT 1`,
    );
    const bad = reader.getRowsJS()[0];
    if (bad) {
      const row = rows[Number(bad[0])] as Row;
      const index = bad.slice(1).indexOf(true);
      const column = columns[index] as DuckdbColumn;
      throw new RefusedChangeError(
        table.source,
        keyOf(table, row),
        `column ${JSON.stringify(column.name)}: the value cannot be stored as DuckDB ${column.type}`,
      );
    }
  }

  /** Reads the target tables through this process's instance of the file, on connections of its own. */
  async comparison() {
    return duckdbComparison(this.ctx.connection.path, (table) => this.targetOf(table));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([this.turn, ...this.partitions]);
    this.conn?.closeSync();
    this.conn = undefined;
    if (this.instance) {
      this.instance = undefined;
      await releaseInstance(this.ctx.connection.path);
    }
  }

  private tableOf(ref: TableRef): TargetTable {
    const table = this.tables.get(tableRefKey(ref));
    if (!table) throw new Error(`table ${tableKey(ref)} was not opened by this sink`);
    return table;
  }

  private transaction<T>(work: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
    return inTransaction(this.driver, work);
  }

  // The sink's one connection: a failed rollback leaves it to the next transaction to fail.
  private readonly driver: TransactionDriver<DuckDBConnection> = {
    ...connectionDriver(undefined),
    acquire: async () => this.connection(),
  };
}

/** Transactions on `conn` (a partition's own), or on the one `acquire` gives. */
function connectionDriver(conn: DuckDBConnection | undefined): TransactionDriver<DuckDBConnection> {
  return {
    acquire: async () => conn as DuckDBConnection,
    begin: (c) => c.run('BEGIN TRANSACTION'),
    commit: (c) => c.run('COMMIT'),
    rollback: (c) => c.run('ROLLBACK'),
    release: () => {},
  };
}

/** The key of a row, in source text, for a refusal. */
function keyOf(table: TargetTable, row: Row): Row {
  return Object.fromEntries(table.source.keyColumns.map((k) => [k, row[k] ?? null]));
}

const prefixed = (key: Row): Row =>
  Object.fromEntries(Object.entries(key).map(([k, v]) => [`\u0000old${k}`, v]));

/** `t.k1 = CAST(s.c0 AS …) AND …` for key columns staged first. */
function keyMatch(t: string, cols: readonly DuckdbColumn[], s: string): string {
  return cols.map((c, i) => `${t}.${quoteIdent(c.name)} = ${c.cast(`${s}.c${i}`)}`).join(' AND ');
}
