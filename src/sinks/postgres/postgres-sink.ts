import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Checkpoint, TableRef, TableSchema } from '../../core/change.js';
import type { CopyFormat } from '../../core/copy-binary.js';
import type { HeldTransaction } from '../../core/held-transaction.js';
import { formatLsn, parseLsn } from '../../core/lsn.js';
import { failureOn, surviveConnectionLossInPool } from '../../core/pg-connection-loss.js';
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
import { healsByRetrying, sqlstateOf } from '../../core/sqlstate.js';
import { partitionsOfMarkers } from '../snapshot-partitions.js';
import { inTransaction, type TransactionDriver } from '../sql-transaction.js';
import { tableRefKey } from '../table-ref-key.js';
import { refuseSharedTargets } from '../target-names.js';
import { planBatch, type Statement, type TargetTable } from './apply-plan.js';
import { arrayParameters } from './array-literal.js';
import { binaryCopyFits } from './binary-copy-types.js';
import { postgresComparison } from './comparison.js';
import { type PostgresSinkConfig, parsePostgresSinkProperties, tableKey, targetTableOf } from './config.js';
import { copyMessagesFrom } from './copy-messages-in.js';
import { copyRowsUnlessPresent } from './copy-rows.js';
import {
  addPrimaryKeySql,
  BOOKKEEPING_SCHEMA,
  copyFromSql,
  qualifiedName,
  quoteIdent,
  truncateSql,
} from './ddl.js';
import { openPostgresHeldTransaction } from './held-transaction.js';
import { type PipelinedQuery, PipelinedQueryError, pipelinedQueries } from './pipelined-queries.js';
import { RecentCopyBinary } from './recent-copy-binary.js';
import { RecentCopyText, refusedCopyLine } from './refused-copy-line.js';
import { refusedChange } from './refused-row.js';
import { schemaChangeSql } from './schema-change.js';
import { deferredKeys, ensureBookkeeping, inspectTarget, prepareTarget } from './target-tables.js';

const BOOK = quoteIdent(BOOKKEEPING_SCHEMA);
const UNDEFINED_TABLE = '42P01';
/** What the checkpoint statement's refusal says, before where the row stood (see checkpointRefusal). */
const REFUSED = 'refused: checkpoint';
const REFUSAL = new RegExp(`${REFUSED} (\\S+) of epoch (\\d+)`);

const SQL = {
  // Run first in the batch's transaction: takes the checkpoint row's lock (an older worker waits
  // for a newer one's batch, and the reverse) and stores the batch's checkpoint, unless a newer
  // epoch is stored. It fails the transaction in the server, with an error naming where the row
  // stood (see checkpointRefusal), when it was not stored or when a newer worker's first batch
  // starts ($4) before it: COMMIT can then follow in the same round trip, as a refused batch's
  // COMMIT only rolls back. `held` is read whole (count) before the insert runs: read after it,
  // the row this statement updated would be skipped. A CASE arm that fails is evaluated only when
  // chosen because it reads `held`, a value the planner cannot fold.
  storeCheckpoint:
    `WITH held AS (SELECT lsn, epoch FROM ${BOOK}.checkpoints WHERE pipeline_id = $1 FOR UPDATE), ` +
    `stored AS (INSERT INTO ${BOOK}.checkpoints AS c (pipeline_id, lsn, epoch, updated_at) ` +
    'SELECT $1::text, $2::pg_lsn, $3::bigint, now() FROM (SELECT count(*) FROM held) AS locked ' +
    'ON CONFLICT (pipeline_id) DO UPDATE SET lsn = EXCLUDED.lsn, epoch = EXCLUDED.epoch, updated_at = now() ' +
    'WHERE c.epoch <= EXCLUDED.epoch RETURNING 1) ' +
    'SELECT CASE WHEN NOT EXISTS (SELECT FROM stored) OR (held.epoch < $3 AND held.lsn > least($2::pg_lsn, $4::pg_lsn)) ' +
    `THEN ('${REFUSED} ' || held.lsn::text || ' of epoch ' || held.epoch::text)::int END AS refused ` +
    'FROM (SELECT) AS one LEFT JOIN held ON true',
  readCheckpoint: `SELECT lsn::text AS lsn, epoch::text AS epoch FROM ${BOOK}.checkpoints WHERE pipeline_id = $1`,
  markPartition:
    `INSERT INTO ${BOOK}.snapshot_partitions (pipeline_id, table_name, partition_id, rows, done_at) ` +
    'VALUES ($1, $2, $3, $4, now()) ON CONFLICT (pipeline_id, table_name, partition_id) ' +
    'DO UPDATE SET rows = EXCLUDED.rows, done_at = EXCLUDED.done_at',
  partitionsDone:
    `SELECT table_name, partition_id FROM ${BOOK}.snapshot_partitions WHERE pipeline_id = $1 ` +
    'ORDER BY table_name, partition_id',
  forgetPartitions: `DELETE FROM ${BOOK}.snapshot_partitions WHERE pipeline_id = $1 AND table_name = $2`,
  lockDeferredKey: `SELECT 1 FROM ${BOOK}.deferred_keys WHERE pipeline_id = $1 AND target = $2 FOR UPDATE`,
  forgetDeferredKey: `DELETE FROM ${BOOK}.deferred_keys WHERE pipeline_id = $1 AND target = $2`,
};

/** A sink writing into PostgreSQL tables, each call one transaction. */
export function createPostgresSink(ctx: SinkContext<pg.ClientConfig>): Sink {
  return new PostgresSink(ctx, parsePostgresSinkProperties(ctx.properties));
}

class PostgresSink implements Sink {
  private readonly pool: pg.Pool;
  private readonly tables = new Map<string, TargetTable>();
  private readonly copyRefusedUntil = new Map<string, number>();
  private deferredKeys = new Set<string>();
  private closed = false;

  constructor(
    private readonly ctx: SinkContext<pg.ClientConfig>,
    private readonly config: PostgresSinkConfig,
  ) {
    // A few connections so snapshot partitions can be written in parallel; batches use one at a time.
    this.pool = new pg.Pool({
      ...ctx.connection,
      max: 4,
      application_name: 'replicator-sink',
      // A writer frozen inside a transaction (a paused VM, a cut network) holds the checkpoint row's
      // lock; the server ends it, so that the worker that took the pipeline over is not blocked for ever.
      options: `-c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_LIMIT_MS}`,
    });
    // A connection the server ends mid-batch fails the batch, never the process.
    surviveConnectionLossInPool(this.pool);
  }

  async inspectTargets(tables: readonly TableSchema[]): Promise<TargetState[]> {
    if (tables.length === 0) return [];
    const client = await this.pool.connect();
    try {
      const states: TargetState[] = [];
      for (const source of tables) {
        states.push(await inspectTarget(client, source, targetTableOf(this.config, source)));
      }
      return states;
    } finally {
      client.release();
    }
  }

  async open(tables: TableSchema[]): Promise<void> {
    refuseSharedTargets(tables, (source) => targetTableOf(this.config, source));
    const opened = await this.transaction(async (client) => {
      await ensureBookkeeping(client);
      const prepared: TargetTable[] = [];
      for (const source of tables) {
        const target = targetTableOf(this.config, source);
        const written = await prepareTarget(
          client,
          source,
          target,
          this.config.createTables,
          this.ctx.pipelineId,
        );
        prepared.push({
          source: written,
          target,
          keys: source.keyColumns.map((name) => columnOf(written, name)),
        });
      }
      return { prepared, deferred: await deferredKeys(client, this.ctx.pipelineId) };
    });
    for (const table of opened.prepared) this.tables.set(tableRefKey(table.source), table);
    this.deferredKeys = opened.deferred;
  }

  async finishSnapshot(table: TableRef): Promise<void> {
    const { target, source } = this.tableOf(table);
    const name = qualifiedName(target);
    if (!this.deferredKeys.has(name)) return;
    await this.transaction(async (client) => {
      // Locked: a second opening of this pipeline's sink (a takeover) builds it once.
      const pending = await client.query(SQL.lockDeferredKey, [this.ctx.pipelineId, name]);
      if (pending.rowCount !== 1) return;
      await client.query(addPrimaryKeySql(target, source.keyColumns));
      await client.query(SQL.forgetDeferredKey, [this.ctx.pipelineId, name]);
    });
    this.deferredKeys.delete(name);
  }

  planSchemaChange(current: TableSchema, changes: readonly SchemaChangeItem[]): string[] {
    return schemaChangeSql(targetTableOf(this.config, current), changes);
  }

  async applySchemaChange(
    proposed: TableSchema,
    statements: readonly string[],
  ): Promise<{ skipped: string[] }> {
    const target = targetTableOf(this.config, proposed);
    const skipped: string[] = [];
    const table = await this.transaction(async (client) => {
      for (const statement of statements) {
        if (!(await runUnlessDone(client, statement))) skipped.push(statement);
      }
      // Whatever was skipped, the table must now have the proposed shape.
      const written = await prepareTarget(client, proposed, target, false, this.ctx.pipelineId);
      return { source: written, target, keys: proposed.keyColumns.map((name) => columnOf(written, name)) };
    });
    this.tables.set(tableRefKey(table.source), table);
    return { skipped };
  }

  async readCheckpoint(): Promise<Checkpoint | null> {
    const rows = await this.queryBookkeeping<{ lsn: string; epoch: string }>(SQL.readCheckpoint);
    const row = rows[0];
    return row ? { lsn: parseLsn(row.lsn), epoch: Number(row.epoch) } : null;
  }

  async snapshotPartitionsDone(): Promise<SnapshotPartition[]> {
    const rows = await this.queryBookkeeping<{ table_name: string; partition_id: string }>(
      SQL.partitionsDone,
    );
    return partitionsOfMarkers(
      rows,
      [...this.tables.values()].map((t) => t.source),
    );
  }

  async resetTable(table: TableSchema): Promise<void> {
    const target = targetTableOf(this.config, table);
    await this.transaction(async (client) => {
      await client.query(truncateSql([target]));
      await client.query(SQL.forgetPartitions, [this.ctx.pipelineId, tableKey(table)]);
    });
  }

  snapshotCopyFormat(table: TableSchema): CopyFormat {
    // The target's column types as this sink opened it, in the source's column order.
    return binaryCopyFits(table, this.tableOf(table).source) ? 'binary' : 'text';
  }

  async writeSnapshotPartition(
    table: TableSchema,
    partition: SnapshotPartition,
    copyText: Readable,
    format: CopyFormat = 'text',
  ): Promise<number> {
    const target = targetTableOf(this.config, table);
    return await this.transaction(async (client) => {
      const sql = copyFromSql(target, table.columns, format);
      const copy = client.query(format === 'binary' ? copyMessagesFrom(sql) : copyFrom(sql));
      const recent = (format === 'binary' ? new RecentCopyBinary() : new RecentCopyText()).watch(copyText);
      try {
        await pipeline(copyText, copy);
      } catch (error) {
        throw refusedCopyLine(table, recent, error) ?? error;
      }
      const rows = copy.rowCount;
      await client.query(SQL.markPartition, [
        this.ctx.pipelineId,
        tableKey(table),
        partition.partitionId,
        rows,
      ]);
      return rows;
    });
  }

  async applyBatch(batch: ChangeBatch): Promise<void> {
    // Upserts need the key: a table whose snapshot did not say it was done gets it now.
    if (this.deferredKeys.size > 0) {
      const refs = new Map(
        batch.changes.flatMap((c) => c.tables ?? [c.table]).map((t) => [tableRefKey(t), t]),
      );
      for (const ref of refs.values()) await this.finishSnapshot(ref);
    }
    const statements = planBatch(batch.changes, (ref) => this.tableOf(ref));
    let at = -1;
    try {
      return await this.writeBatch(batch, statements, (i) => {
        at = i;
      });
    } catch (error) {
      const sqlstate = sqlstateOf(error);
      if (at < 0 || sqlstate === undefined || healsByRetrying(sqlstate)) throw error;
      const client = await this.pool.connect();
      try {
        throw await refusedChange(client, statements, at, error as Error);
      } finally {
        client.release(true);
      }
    }
  }

  /**
   * Applies the checkpoint and the statements in one transaction, telling which statement runs.
   * BEGIN, the checkpoint and the statements up to the first COPY go in one round trip (pipelined),
   * as do the statements between two COPYs, and COMMIT goes with the last of them: the checkpoint
   * refuses a batch in the server (see SQL.storeCheckpoint), and a refused batch's COMMIT only
   * rolls back. A batch without a COPY costs one round trip.
   */
  private writeBatch(batch: ChangeBatch, statements: Statement[], running: (index: number) => void) {
    let committed = false;
    const driver: TransactionDriver<pg.PoolClient> = {
      ...this.driver,
      // BEGIN goes in the first pipelined run, COMMIT in the last unless a COPY ends the batch.
      begin: async () => undefined,
      commit: async (client) => (committed ? undefined : client.query('COMMIT')),
    };
    return inTransaction(driver, async (client) => {
      let first = true;
      let next = 0;
      while (first || next < statements.length) {
        let end = next;
        while (end < statements.length && !(statements[end] as Statement).copy) end++;
        const lead: PipelinedQuery[] = first ? [{ text: 'BEGIN' }, this.checkpointQuery(batch)] : [];
        const run = statements
          .slice(next, end)
          .map((s) => ({ text: s.text, values: arrayParameters(s.values) }));
        const last = end === statements.length;
        let results: pg.QueryResult[];
        try {
          results = await pipelinedQueries(client, [...lead, ...run, ...(last ? [{ text: 'COMMIT' }] : [])]);
        } catch (error) {
          if (!(error instanceof PipelinedQueryError)) throw error;
          if (first && error.index === 1) throw checkpointRefusal(error.error, batch);
          const at = error.index - lead.length;
          // Past the statements: COMMIT failed (a deferred constraint), which no statement names.
          running(at < run.length ? next + at : -1);
          throw error.error;
        }
        if (last) {
          expectCommitted(results);
          committed = true;
        }
        first = false;
        next = end;
        const copied = statements[next];
        if (!copied?.copy) continue;
        running(next);
        if (!(await this.copyRows(client, copied.copy)))
          await client.query(copied.text, arrayParameters(copied.values));
        next++;
      }
      running(-1);
    });
  }

  /**
   * Stores the batch's checkpoint in the transaction open on `client` (see SQL.storeCheckpoint) and
   * commits it, in one round trip.
   */
  private async commitWithCheckpoint(client: pg.ClientBase, batch: ChangeBatch): Promise<void> {
    let results: pg.QueryResult[];
    try {
      results = await pipelinedQueries(client, [this.checkpointQuery(batch), { text: 'COMMIT' }]);
    } catch (error) {
      if (!(error instanceof PipelinedQueryError)) throw error;
      throw error.index === 0 ? checkpointRefusal(error.error, batch) : error.error;
    }
    expectCommitted(results);
  }

  private checkpointQuery(batch: ChangeBatch): PipelinedQuery {
    // A change carries its commit record's start, which a checkpoint (a commit's end) lies after.
    const from = batch.changes[0]?.commitLsn ?? batch.commitLsn;
    return {
      text: SQL.storeCheckpoint,
      values: [this.ctx.pipelineId, formatLsn(batch.commitLsn), batch.epoch, formatLsn(from)],
    };
  }

  openHeldTransaction(): Promise<HeldTransaction> {
    // Asked for every change: each table is looked up once (its changes share one ref).
    const found = new WeakMap<TableRef, TargetTable>();
    return openPostgresHeldTransaction({
      connection: this.ctx.connection,
      options: `-c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_LIMIT_MS}`,
      lookup: (ref) => {
        let table = found.get(ref);
        if (table) return table;
        table = this.tableOf(ref);
        // A table still without its key (its copy not declared done) is written by batches alone.
        if (this.deferredKeys.has(qualifiedName(table.target))) {
          throw new Error(`${tableKey(ref)} has no key in the sink yet`);
        }
        found.set(ref, table);
        return table;
      },
      commitWithCheckpoint: (client, batch) => this.commitWithCheckpoint(client, batch),
    });
  }

  /**
   * Writes inserted rows with a plain COPY, under a savepoint; false (nothing written) when a key
   * is there already (a replay), and the upsert is to run instead. A table whose COPY met a key is
   * written by upserts for a while, not made to fail twice per batch. Any other failure is the
   * batch's (a row the target refuses is found from it, see applyBatch).
   */
  private async copyRows(client: pg.PoolClient, copy: NonNullable<Statement['copy']>): Promise<boolean> {
    const key = tableRefKey(copy.target);
    if ((this.copyRefusedUntil.get(key) ?? 0) > Date.now()) return false;
    if (await copyRowsUnlessPresent(client, copy)) return true;
    this.copyRefusedUntil.set(key, Date.now() + COPY_COOL_DOWN_MS);
    return false;
  }

  async comparison() {
    return postgresComparison(this.ctx.connection, (table) => targetTableOf(this.config, table));
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

  /** Rows of a bookkeeping query by pipeline id; none when the bookkeeping tables do not exist yet. */
  private async queryBookkeeping<R extends pg.QueryResultRow>(sql: string): Promise<R[]> {
    try {
      return (await this.pool.query<R>(sql, [this.ctx.pipelineId])).rows;
    } catch (error) {
      if ((error as { code?: string }).code === UNDEFINED_TABLE) return [];
      throw error;
    }
  }

  private transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.driver, work);
  }

  private readonly driver: TransactionDriver<pg.PoolClient> = {
    acquire: () => this.pool.connect(),
    begin: (client) => client.query('BEGIN'),
    commit: (client) => client.query('COMMIT'),
    rollback: (client) => client.query('ROLLBACK'),
    release: (client, broken) => client.release(broken),
    failure: failureOn,
  };
}

/**
 * The error for a batch whose checkpoint statement failed: FencedError when a newer worker owns
 * the pipeline, CheckpointAheadError when the batch is behind the row, read from the statement's
 * refusal (where the row stood, whatever language the server words its errors in); any other
 * failure as it is.
 */
function checkpointRefusal(error: unknown, batch: ChangeBatch): unknown {
  const said = error instanceof Error ? REFUSAL.exec(error.message) : null;
  if (!said) return error;
  const stored = { lsn: parseLsn(said[1] as string), epoch: Number(said[2]) };
  if (stored.epoch > batch.epoch) return new FencedError(stored.epoch, batch.epoch);
  try {
    refuseBatchBehind(stored, batch);
  } catch (behind) {
    return behind;
  }
  return error;
}

/** Throws unless the last of a pipelined run's results is its COMMIT's. */
function expectCommitted(results: readonly pg.QueryResult[]): void {
  // COMMIT of a transaction that failed answers ROLLBACK; the failure is reported before it.
  if (results.at(-1)?.command !== 'COMMIT') throw new Error('the sink did not commit the batch');
}

/** How long a table whose COPY of inserts failed is written by upserts only. */
const COPY_COOL_DOWN_MS = 60_000;

/** How long a sink session may sit idle inside a transaction before the server ends it. */
export const IDLE_IN_TRANSACTION_LIMIT_MS = 30_000;

// A column that exists already, or is gone already: someone made the change by hand.
const ALREADY_DONE = new Set(['42701', '42703', '42P07', '42704']);

/** Runs a DDL statement under a savepoint; false when the sink already was as it asks. */
async function runUnlessDone(client: pg.ClientBase, statement: string): Promise<boolean> {
  await client.query('SAVEPOINT ddl');
  try {
    await client.query(statement);
    await client.query('RELEASE SAVEPOINT ddl');
    return true;
  } catch (error) {
    if (!ALREADY_DONE.has(sqlstateOf(error) ?? '')) throw error;
    await client.query('ROLLBACK TO SAVEPOINT ddl');
    return false;
  }
}

function columnOf(table: TableSchema, name: string) {
  const column = table.columns.find((c) => c.name === name);
  if (column) return column;
  throw new Error(`key column ${JSON.stringify(name)} of ${tableKey(table)} is not one of its columns`);
}
