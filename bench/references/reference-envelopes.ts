import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { ChangeEvent, Row, TableSchema } from '../../src/core/change.js';
import { copyTextRows } from '../../src/core/copy-text.js';
import { PG_TEXT_SESSION_OPTIONS } from '../../src/core/pg-comparison.js';
import { changeEnvelopes, envelopeText, readEnvelope } from '../../src/sinks/change-envelope.js';
import { readTableSchemas } from '../../src/source/postgres/catalog.js';
import type { ReferenceInput } from '../sink-reference.js';
import { SNAPSHOT_TABLE } from '../snapshot-table.js';

/**
 * The JSON change envelopes a broker or webhook sink sends for the benchmark's rows and changes,
 * built by the sink's own code (src/sinks/change-envelope.ts), for a reference to send the same
 * bytes. Untimed: the references time only the sending.
 */

const [schemaName, tableName] = SNAPSHOT_TABLE.split('.') as [string, string];

/** An envelope and the id the sink gives it. */
export interface EnvelopeText {
  id: string;
  text: string;
}

/**
 * Rows of `COPY (query) TO STDOUT`, read in the table's shape, with that shape, in the session
 * settings the sink's source reads with (so the values' text is the sink's).
 */
export async function copyRows(url: string, query: string): Promise<{ table: TableSchema; rows: Row[] }> {
  const client = new pg.Client({ connectionString: url, options: PG_TEXT_SESSION_OPTIONS });
  await client.connect();
  try {
    const [table] = await readTableSchemas(client, [{ schema: schemaName, table: tableName }]);
    if (!table) throw new Error(`${SNAPSHOT_TABLE} has no schema`);
    const rows: Row[] = [];
    for await (const chunk of copyTextRows(client.query(copyTo(`COPY (${query}) TO STDOUT`)), table.columns))
      rows.push(...chunk);
    return { table, rows };
  } finally {
    await client.end();
  }
}

/** The `read` envelope of each of the snapshot's N rows. */
export async function snapshotEnvelopes(input: ReferenceInput): Promise<EnvelopeText[]> {
  const { table, rows } = await copyRows(input.snapshotUrl, `SELECT * FROM ${SNAPSHOT_TABLE}`);
  if (rows.length !== input.shape.rows)
    throw new Error(`the snapshot has ${rows.length} rows, expected ${input.shape.rows}`);
  return rows.map((row) => {
    const envelope = readEnvelope(table, row);
    return { id: envelope.id, text: envelopeText(envelope) };
  });
}

/**
 * The backlog's 2 × T change envelopes in commit order: transaction k's update of the row
 * `backlogUpdatedId(k)` (updated once, so its row now is the update's new row), then its insert
 * of `N + k`. The source's commit positions and times are not kept anywhere a reference can read,
 * so each transaction gets one of the same text lengths (WAL positions about as far apart).
 */
export async function backlogEnvelopes(input: ReferenceInput): Promise<EnvelopeText[]> {
  const { rows: n, transactions } = input.shape;
  const { table, rows } = await copyRows(
    input.backlogUrl,
    `SELECT t.* FROM generate_series(1::bigint, ${transactions}) AS k
       JOIN ${SNAPSHOT_TABLE} t ON t.id = ((k - 1) * 7919) % ${n} + 1 OR t.id = ${n} + k
      ORDER BY k, t.id > ${n}`,
  );
  if (rows.length !== 2 * transactions)
    throw new Error(`the backlog has ${rows.length} changed rows, expected ${2 * transactions}`);
  const firstLsn = 0x3000000n;
  const firstTime = Date.parse('2026-01-01T00:00:00Z');
  const changes: ChangeEvent[] = rows.map((after, i) => {
    const k = Math.floor(i / 2);
    return {
      op: i % 2 === 0 ? 'update' : 'insert',
      table,
      after,
      commitLsn: firstLsn + BigInt(k) * 440n,
      xid: 1000 + k,
      // Microseconds, as a commit time from the source is written.
      commitTime: new Date(firstTime + k).toISOString().replace('Z', '123Z'),
    };
  });
  const { envelopes } = changeEnvelopes(changes, () => table, new Map());
  return envelopes.map(({ envelope }) => ({ id: envelope.id, text: envelopeText(envelope) }));
}
