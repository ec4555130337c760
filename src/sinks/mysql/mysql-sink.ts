import type { Readable } from 'node:stream';
import type { ConnectionOptions } from 'mysql2';
import mysql, {
  type Pool,
  type PoolConnection,
  type ResultSetHeader,
  type RowDataPacket,
} from 'mysql2/promise';
import { type Checkpoint, type Row, type TableRef, type TableSchema, tableKey } from '../../core/change.js';
import { copyTextRows } from '../../core/copy-text.js';
import { formatLsn, parseLsn } from '../../core/lsn.js';
import type { SchemaChangeItem } from '../../core/schema-diff.js';
import {
  type ChangeBatch,
  FencedError,
  refuseBatchBehind,
  type Sink,
  type SinkContext,
  type SnapshotPartition,
  type TargetState,
} from '../../core/sink.js';
import { RefusedChangeError } from '../refused-change.js';
import { partitionsOfMarkers } from '../snapshot-partitions.js';
import { inTransaction, type TransactionDriver } from '../sql-transaction.js';
import { tableRefKey } from '../table-ref-key.js';
import { refuseSharedTargets } from '../target-names.js';
import { planBatch, STATEMENT_LIMITS, type Statement, type TargetTable } from './apply-plan.js';
import { bookkeepingSql } from './bookkeeping-sql.js';
import { mysqlComparison } from './comparison.js';
import { foldedTargetKey, type MysqlSinkConfig, mysqlTargetOf, parseMysqlSinkProperties } from './config.js';
import { deleteAllSql } from './ddl.js';
import {
  LOAD_ROWS,
  LOAD_STREAM_NAME,
  loadDataLines,
  loadDataSql,
  loadDataStream,
  refusedFile,
  refusedRowNumber,
  rowKey,
} from './load-data.js';
import { alreadyDone, LocalInfileRefusedError, localInfileRefused, refusesData } from './mysql-errors.js';
import { schemaChangeSql } from './schema-change.js';
import { type UpsertStyle, upsertStyleOf } from './server-dialect.js';
import { SESSION_SQL } from './session.js';
import {
  binaryCollation,
  ensureBookkeeping,
  inspectTarget,
  localInfileAllowed,
  prepareTarget,
  serverVersion,
} from './target-tables.js';

/**
 * A writer frozen inside a transaction (a paused VM, a cut network) holds the checkpoint row's
 * lock; MariaDB ends such a session, so that the worker that took the pipeline over is not blocked
 * for ever. MySQL has no such setting and refuses it, which is ignored.
 */
const IDLE_IN_TRANSACTION_SQL = 'SET SESSION idle_transaction_timeout = 30';

/** How long a connection attempt may take, unless the connection's settings say. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Rows read from a snapshot partition's COPY text at a time. */
const SNAPSHOT_BATCH_ROWS = 1000;

/** MySQL's error for a table that does not exist. */
const NO_SUCH_TABLE = 1146;

/** A sink writing into MySQL or MariaDB tables, each batch one transaction with its checkpoint. */
export function createMysqlSink(ctx: SinkContext<ConnectionOptions>): Sink {
  return new MysqlSink(ctx, parseMysqlSinkProperties(ctx.properties));
}

class MysqlSink implements Sink {
  private readonly pool: Pool;
  private readonly database: string;
  private readonly tables = new Map<string, TargetTable>();
  private collation = 'utf8mb4_bin';
  /** Whether the server takes LOAD DATA LOCAL (`local_infile`, off by default on MySQL 8). */
  private localInfile = false;
  private closed = false;
  private style: UpsertStyle = 'values';
  private sql: ReturnType<typeof bookkeepingSql>;

  constructor(
    private readonly ctx: SinkContext<ConnectionOptions>,
    private readonly config: MysqlSinkConfig,
  ) {
    const database = config.targetDatabase ?? ctx.connection.database;
    if (!database) throw new Error('the mysql connection names no database');
    this.database = database;
    // A few connections so snapshot partitions can be written in parallel; batches use one at a time.
    this.pool = mysql.createPool({
      ...ctx.connection,
      connectTimeout: ctx.connection.connectTimeout ?? CONNECT_TIMEOUT_MS,
      connectionLimit: 4,
      maxIdle: 4,
      // Values are read back as the server prints them, never as JavaScript numbers or dates.
      dateStrings: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
      charset: 'utf8mb4',
      multipleStatements: false,
      // LOAD DATA LOCAL of the sink's own streams: mysql2 answers a server's request for a file
      // only with the stream factory of the statement asking, never from the file system.
      flags: ['LOCAL_FILES'],
      enableKeepAlive: true,
    });
    this.pool.pool.on('connection', (connection) => {
      // An idle connection dropped by the server surfaces again on its next use; do not crash here.
      connection.on('error', () => {});
      // Queued before anything the sink sends on this connection; a session that cannot be set is not used.
      connection.query(SESSION_SQL, (error: unknown) => {
        if (error) connection.destroy();
      });
      connection.query(IDLE_IN_TRANSACTION_SQL, () => {});
    });
    this.sql = bookkeepingSql(database, this.style);
  }

  private targetOf(source: TableRef): TableRef {
    return mysqlTargetOf(this.config, source, this.database);
  }

  async inspectTargets(tables: readonly TableSchema[]): Promise<TargetState[]> {
    if (tables.length === 0) return [];
    return this.withConnection(async (conn) => {
      const states: TargetState[] = [];
      for (const source of tables) states.push(await inspectTarget(conn, source, this.targetOf(source)));
      return states;
    });
  }

  async open(tables: TableSchema[]): Promise<void> {
    refuseSharedTargets(tables, (source) => this.targetOf(source), foldedTargetKey);
    // MySQL DDL commits by itself: each step below is idempotent, so an open that fails part way is run again.
    await this.withConnection(async (conn) => {
      this.collation = await binaryCollation(conn);
      this.localInfile = await localInfileAllowed(conn);
      this.style = upsertStyleOf(await serverVersion(conn));
      this.sql = bookkeepingSql(this.database, this.style);
      await ensureBookkeeping(conn, this.database, this.config.createTables, this.collation);
      for (const source of tables) {
        const table = await prepareTarget(
          conn,
          source,
          this.targetOf(source),
          this.config.createTables,
          this.collation,
        );
        this.tables.set(tableRefKey(source), table);
      }
    });
  }

  async readCheckpoint(): Promise<Checkpoint | null> {
    const rows = await this.queryBookkeeping<{ lsn: string; epoch: string }>(this.sql.readCheckpoint, [
      this.ctx.pipelineId,
    ]);
    const row = rows[0];
    return row ? { lsn: parseLsn(row.lsn), epoch: Number(row.epoch) } : null;
  }

  async snapshotPartitionsDone(): Promise<SnapshotPartition[]> {
    const rows = await this.queryBookkeeping<{ table_name: string; partition_id: string }>(
      this.sql.partitionsDone,
      [this.ctx.pipelineId],
    );
    return partitionsOfMarkers(
      rows,
      [...this.tables.values()].map((t) => t.source),
    );
  }

  async resetTable(table: TableSchema): Promise<void> {
    // Markers and rows go together, by DELETE rather than TRUNCATE: TRUNCATE commits by itself and
    // needs the DROP privilege, which the sink's user need not have.
    await this.transaction(async (conn) => {
      await conn.query(this.sql.forgetPartitions, [this.ctx.pipelineId, tableKey(table)]);
      await conn.query(deleteAllSql(this.targetOf(table)));
    });
  }

  /**
   * A partition is one transaction with its marker: loaded with `LOAD DATA LOCAL INFILE` from the
   * sink's own stream of its rows where the server allows it (`local_infile`), else written with
   * the bounded upserts of a batch.
   */
  async writeSnapshotPartition(
    table: TableSchema,
    partition: SnapshotPartition,
    copyText: Readable,
  ): Promise<number> {
    const target = this.tableOf(table);
    return await this.transaction(async (conn) => {
      const rows = copyTextRows(copyText, table.columns, SNAPSHOT_BATCH_ROWS);
      const count = this.localInfile
        ? await this.loadRows(conn, target, rows[Symbol.asyncIterator]())
        : await this.upsertRows(conn, target, rows);
      await conn.query(this.sql.markPartition, [
        this.ctx.pipelineId,
        tableKey(table),
        partition.partitionId,
        count,
      ]);
      return count;
    });
  }

  /** Rows as LOAD DATA statements of at most LOAD_ROWS rows each; how many there were. */
  private async loadRows(conn: PoolConnection, target: TargetTable, batches: AsyncIterator<Row[]>) {
    const sql = loadDataSql(target.target, target.source.columns, target.binary);
    const line = loadDataLines(target);
    const carry = { rows: [] as Row[] };
    let count = 0;
    for (;;) {
      const rows: Row[] = [];
      await this.load(conn, target, sql, loadDataStream(line, batches, LOAD_ROWS, rows, carry), rows);
      count += rows.length;
      if (rows.length < LOAD_ROWS) return count;
    }
  }

  /**
   * One LOAD DATA of `stream`. The server's request for the data is answered with `stream` only
   * when it names the statement's own name. A refused value is a RefusedChangeError naming the row
   * (the server counts them from 1), whether the server says so by an error or by a warning.
   */
  private async load(
    conn: PoolConnection,
    target: TargetTable,
    sql: string,
    stream: Readable,
    rows: readonly Row[],
  ): Promise<void> {
    const refuse = (message: string, cause: unknown) => {
      const number = refusedRowNumber(cause);
      const row = number === undefined ? undefined : rows[number - 1];
      const key = row && rowKey(target, row);
      return new RefusedChangeError(target.source, key, message, { cause });
    };
    let result: ResultSetHeader;
    try {
      [result] = await conn.query<ResultSetHeader>({
        sql,
        infileStreamFactory: (name: string) => (name === LOAD_STREAM_NAME ? stream : refusedFile(name)),
      });
    } catch (error) {
      if (localInfileRefused(error)) {
        this.localInfile = false;
        throw new LocalInfileRefusedError(error);
      }
      if (!refusesData(error)) throw error;
      throw refuse((error as Error).message, error);
    }
    if (result.warningStatus > 0) {
      const [warnings] = await conn.query<RowDataPacket[]>('SHOW WARNINGS LIMIT 1');
      const message = String(warnings[0]?.Message ?? 'the server changed a value it could not hold');
      throw refuse(message, new Error(message));
    }
  }

  /** Rows as the multi-row upserts of a batch (a partition written again converges). */
  private async upsertRows(conn: PoolConnection, target: TargetTable, batches: AsyncIterable<Row[]>) {
    let count = 0;
    for await (const rows of batches) {
      const inserts = rows.map((after) => ({
        op: 'insert' as const,
        table: target.source,
        after,
        commitLsn: 0n,
        xid: 0,
        commitTime: '',
      }));
      for (const statement of planBatch(inserts, () => target, STATEMENT_LIMITS, this.style))
        await this.run(conn, statement);
      count += rows.length;
    }
    return count;
  }

  /** Nothing is left for the end: a table is created with its primary key, which InnoDB stores rows by. */
  async finishSnapshot(table: TableRef): Promise<void> {
    this.tableOf(table);
  }

  planSchemaChange(current: TableSchema, changes: readonly SchemaChangeItem[]): string[] {
    return schemaChangeSql(this.targetOf(current), current, changes);
  }

  /**
   * MySQL DDL commits each statement by itself, so the plan cannot be one transaction as the
   * contract asks: a plan that fails part way is run again, and a statement whose change the
   * table already has (an added column that is there, a dropped one that is gone) is skipped.
   */
  async applySchemaChange(
    proposed: TableSchema,
    statements: readonly string[],
  ): Promise<{ skipped: string[] }> {
    const skipped: string[] = [];
    const table = await this.withConnection(async (conn) => {
      for (const statement of statements) {
        try {
          await conn.query(statement);
        } catch (error) {
          if (!alreadyDone(error)) throw error;
          skipped.push(statement);
        }
      }
      // Whatever was skipped, the table must now have the proposed shape.
      return prepareTarget(conn, proposed, this.targetOf(proposed), false, this.collation);
    });
    this.tables.set(tableRefKey(proposed), table);
    return { skipped };
  }

  async applyBatch(batch: ChangeBatch): Promise<void> {
    const statements = planBatch(batch.changes, (ref) => this.tableOf(ref), STATEMENT_LIMITS, this.style);
    const id = this.ctx.pipelineId;
    return this.transaction(async (conn) => {
      const [locked] = await conn.query<RowDataPacket[]>(this.sql.lockCheckpoint, [id]);
      const stored = locked[0] ? Number(locked[0].epoch) : undefined;
      if (stored !== undefined && stored > batch.epoch) throw new FencedError(stored, batch.epoch);
      const lsn = (locked[0]?.lsn as string | null | undefined) ?? null;
      refuseBatchBehind(
        stored === undefined ? undefined : { lsn: lsn === null ? null : parseLsn(lsn), epoch: stored },
        batch,
      );
      for (const statement of statements) await this.run(conn, statement);
      await conn.query(this.sql.storeCheckpoint, [id, formatLsn(batch.commitLsn), batch.epoch]);
    });
  }

  /**
   * Runs one planned statement. A server refusing its data is a RefusedChangeError, not retried,
   * naming the row it refuses: MySQL undoes just the failed statement, so its rows are tried one
   * by one under a savepoint (undone too, as the whole transaction is about to be).
   */
  private async run(conn: PoolConnection, statement: Statement): Promise<void> {
    try {
      await conn.query(statement.sql, statement.values);
    } catch (error) {
      if (!refusesData(error)) throw error;
      const about = statement.about;
      let key = about?.keys.length === 1 ? about.keys[0] : undefined;
      if (key === undefined && about && statement.row) {
        key = await this.refusedRow(conn, statement.row, about.keys).catch(() => undefined);
      }
      throw new RefusedChangeError(about?.table, key, (error as Error).message, { cause: error });
    }
  }

  private async refusedRow(
    conn: PoolConnection,
    row: NonNullable<Statement['row']>,
    keys: readonly Row[],
  ): Promise<Row | undefined> {
    await conn.query('SAVEPOINT probe');
    try {
      for (const [index, key] of keys.entries()) {
        const single = row(index);
        try {
          await conn.query(single.sql, single.values);
        } catch (error) {
          if (refusesData(error)) return key;
          throw error;
        }
      }
      return undefined;
    } finally {
      await conn.query('ROLLBACK TO SAVEPOINT probe');
    }
  }

  /** Reads the target tables on connections of its own, never the writing pool's. */
  async comparison() {
    return mysqlComparison(this.ctx.connection, (table) => this.targetOf(table));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  private tableOf(ref: TableRef): TargetTable {
    const table = this.tables.get(tableRefKey(ref));
    if (!table) throw new Error(`table ${tableKey(ref)} was not opened by this sink`);
    return table;
  }

  /** Rows of a bookkeeping query; none when the bookkeeping tables do not exist yet. */
  private async queryBookkeeping<R>(sql: string, values: unknown[]): Promise<R[]> {
    try {
      const [rows] = await this.pool.query<RowDataPacket[]>(sql, values);
      return rows as unknown as R[];
    } catch (error) {
      if ((error as { errno?: number }).errno === NO_SUCH_TABLE) return [];
      throw error;
    }
  }

  private async withConnection<T>(work: (conn: PoolConnection) => Promise<T>): Promise<T> {
    const conn = await this.pool.getConnection();
    try {
      return await work(conn);
    } finally {
      conn.release();
    }
  }

  private transaction<T>(work: (conn: PoolConnection) => Promise<T>): Promise<T> {
    return inTransaction(this.driver, work);
  }

  private readonly driver: TransactionDriver<PoolConnection> = {
    acquire: () => this.pool.getConnection(),
    begin: (conn) => conn.beginTransaction(),
    commit: (conn) => conn.commit(),
    rollback: (conn) => conn.rollback(),
    release: (conn, broken) => (broken ? conn.destroy() : conn.release()),
  };
}
