import pg from 'pg';
import type { ChangeEvent, TableRef } from '../../core/change.js';
import type { HeldTransaction } from '../../core/held-transaction.js';
import { failureOn, surviveConnectionLoss } from '../../core/pg-connection-loss.js';
import type { ChangeBatch } from '../../core/sink.js';
import { planBatch, type Statement, type TargetTable } from './apply-plan.js';
import { arrayParameters } from './array-literal.js';
import { copyRows } from './copy-rows.js';

export interface HeldTransactionDeps {
  /** The sink's connection settings: the transaction gets a connection of its own. */
  connection: pg.ClientConfig;
  /** The sink's table of a source table; throws for one it cannot write on this path. */
  lookup(ref: TableRef): TargetTable;
  /**
   * Locks, checks (fencing) and stores the checkpoint in the transaction of `client`, as a batch
   * does, and commits it, in one round trip.
   */
  commitWithCheckpoint(client: pg.ClientBase, batch: ChangeBatch): Promise<void>;
  /** Session options of the sink's connections. */
  options?: string;
}

/** Opens a transaction held for a streamed source transaction, on a new connection. */
export async function openPostgresHeldTransaction(deps: HeldTransactionDeps): Promise<HeldTransaction> {
  const client = new pg.Client({
    ...deps.connection,
    application_name: 'replicator-sink-streamed',
    ...(deps.options ? { options: deps.options } : {}),
  });
  surviveConnectionLoss(client);
  try {
    await client.connect();
    await client.query('BEGIN');
  } catch (error) {
    await client.end().catch(() => undefined);
    throw failureOn(client, error);
  }
  return new PostgresHeldTransaction(client, deps);
}

/**
 * The PostgreSQL held transaction: each piece planned as a batch is (set-based statements, a COPY
 * for rows that are all inserts), subtransactions as savepoints, the checkpoint written only at
 * the commit.
 */
class PostgresHeldTransaction implements HeldTransaction {
  /** Subtransactions with a savepoint, oldest first: an undo to one drops those after it. */
  private readonly savepoints: number[] = [];
  private ended = false;

  constructor(
    private readonly client: pg.Client,
    private readonly deps: HeldTransactionDeps,
  ) {}

  async apply(changes: ChangeEvent[]): Promise<void> {
    for (const statement of planBatch(changes, (ref) => this.deps.lookup(ref))) {
      if (statement.copy) await this.copyRows(statement.copy);
      else await this.query(statement.text, arrayParameters(statement.values));
    }
  }

  async savepoint(subxid: number): Promise<void> {
    await this.query(`SAVEPOINT ${savepointName(subxid)}`);
    this.savepoints.push(subxid);
  }

  async rollbackTo(subxid: number): Promise<void> {
    const at = this.savepoints.indexOf(subxid);
    if (at < 0) return;
    await this.query(`ROLLBACK TO SAVEPOINT ${savepointName(subxid)}`);
    this.savepoints.length = at + 1;
  }

  async commit(batch: ChangeBatch): Promise<void> {
    try {
      await this.deps.commitWithCheckpoint(this.client, batch);
      this.ended = true;
    } catch (error) {
      throw failureOn(this.client, error);
    } finally {
      await this.abort();
    }
  }

  async abort(): Promise<void> {
    if (!this.ended) {
      this.ended = true;
      await this.client.query('ROLLBACK').catch(() => undefined);
    }
    await this.client.end().catch(() => undefined);
  }

  private async query(text: string, values?: unknown[]): Promise<void> {
    try {
      await this.client.query(text, values);
    } catch (error) {
      throw failureOn(this.client, error);
    }
  }

  /**
   * Inserted rows by a plain COPY. Not under a savepoint: past 64 subtransactions a transaction
   * overflows its cache of them, and every reader of the sink then looks each row it holds up in
   * pg_subtrans (a count of the table while a 1,000,000-row transaction was held took the sink's
   * CPU from about 2 to 6 s). A key already there fails the held transaction, which the source then
   * replays after its commit, through the batch's own fallback to the upsert.
   */
  private async copyRows(copy: NonNullable<Statement['copy']>): Promise<void> {
    try {
      await copyRows(this.client, copy);
    } catch (error) {
      throw failureOn(this.client, error);
    }
  }
}

// A subtransaction's xid is a number: the name needs no quoting.
const savepointName = (subxid: number) => `sub_${subxid}`;
