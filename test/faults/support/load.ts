import pg from 'pg';
import { parseLsn } from '../../../src/core/lsn.js';

/** The source tables every fault scenario replicates; `version` only ever goes up on an update. */
export const LOAD_SCHEMA_SQL = `
CREATE TABLE items (id bigint PRIMARY KEY, version bigint NOT NULL, payload text NOT NULL);
CREATE SEQUENCE items_id_seq;
-- One row per load transaction, written in it: which transactions the sink holds.
CREATE TABLE load_tx (id bigint PRIMARY KEY, client int NOT NULL);
CREATE SEQUENCE load_tx_id_seq;`;

export const LOAD_TABLES = ['public.items', 'public.load_tx'];

/** Seeds `items` with `rows` rows of version 0. */
export function seedSql(rows: number): string {
  return `INSERT INTO items SELECT g, 0, md5(g::text) FROM generate_series(1, ${rows}) g;
SELECT setval('items_id_seq', ${rows});`;
}

/** A load transaction known to be committed, and a position at or after the end of its commit record. */
export interface CommittedTransaction {
  id: number;
  /** pg_current_wal_insert_lsn() read after COMMIT returned, on the same session. */
  afterLsn: bigint;
}

export interface LoadOptions {
  clients: number;
  /** Transactions in all, across clients; the load also stops at `maxMs` or on `stop()`. */
  transactions: number;
  maxMs: number;
}

/**
 * Writes inserts, updates (version + 1) and deletes of `items` in many small transactions from
 * several sessions, each transaction with its row in `load_tx`. It stops by itself after its count
 * or its time. A session that loses its server (a restart) reconnects and goes on; a transaction
 * whose COMMIT got no answer is not counted as committed (the final comparison covers it).
 */
export class LoadGenerator {
  readonly committed: CommittedTransaction[] = [];
  failedTransactions = 0;
  private stopped = false;
  private started = 0;
  private issued = 0;
  private readonly done: Promise<void>;

  constructor(
    private readonly url: string,
    private readonly options: LoadOptions,
  ) {
    this.started = Date.now();
    this.done = Promise.all(Array.from({ length: options.clients }, (_, i) => this.client(i + 1))).then(
      () => undefined,
    );
  }

  /** Resolves when every session has finished. */
  finished(): Promise<void> {
    return this.done;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }

  /** Waits until this many transactions committed (or the load ended). */
  async reached(count: number): Promise<void> {
    let over = false;
    void this.done.then(() => {
      over = true;
    });
    while (this.committed.length < count && !over) await new Promise((r) => setTimeout(r, 50));
  }

  private more(): boolean {
    if (this.stopped || Date.now() - this.started > this.options.maxMs) return false;
    if (this.issued >= this.options.transactions) return false;
    this.issued++;
    return true;
  }

  private async client(clientId: number): Promise<void> {
    let session: pg.Client | undefined;
    while (this.more()) {
      try {
        if (!session) session = await connect(this.url);
        this.committed.push(await oneTransaction(session, clientId));
      } catch {
        this.failedTransactions++;
        await session?.end().catch(() => undefined);
        session = undefined;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    await session?.end().catch(() => undefined);
  }
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: 'fault-load' });
  client.on('error', () => undefined); // surfaces on the next query
  await client.connect();
  return client;
}

const pick = <T>(choices: T[]): T => choices[Math.floor(Math.random() * choices.length)] as T;

/** One to three changes of `items` (distinct rows, in key order, so sessions do not deadlock) and its `load_tx` row. */
async function oneTransaction(client: pg.Client, clientId: number): Promise<CommittedTransaction> {
  await client.query('BEGIN');
  try {
    const top = Number(
      (await client.query<{ n: string }>('SELECT last_value AS n FROM items_id_seq')).rows[0]?.n,
    );
    const keys = [
      ...new Set(
        Array.from({ length: 1 + Math.floor(Math.random() * 3) }, () => 1 + Math.floor(Math.random() * top)),
      ),
    ].sort((a, b) => a - b);
    for (const id of keys) {
      const kind = pick(['update', 'update', 'update', 'insert', 'insert', 'delete']);
      if (kind === 'update')
        await client.query(
          'UPDATE items SET version = version + 1, payload = md5(random()::text) WHERE id = $1',
          [id],
        );
      else if (kind === 'delete') await client.query('DELETE FROM items WHERE id = $1', [id]);
      else await client.query("INSERT INTO items SELECT nextval('items_id_seq'), 0, md5(random()::text)");
    }
    const { rows } = await client.query<{ id: string }>(
      "INSERT INTO load_tx VALUES (nextval('load_tx_id_seq'), $1) RETURNING id",
      [clientId],
    );
    await client.query('COMMIT');
    const after = await client.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
    return { id: Number(rows[0]?.id), afterLsn: parseLsn(after.rows[0]?.lsn as string) };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
