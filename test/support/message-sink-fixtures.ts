import { Readable } from 'node:stream';
import type { ChangeEvent, Row, TableSchema } from '../../src/core/change.js';
import { col, tableOf } from './table-schemas.js';

/**
 * The tables, snapshot rows and transactions the sink contract tests of the message sinks share:
 * `public.orders (id int key, total numeric, note text)` and `shop.lines (id bigint key, sku text)`.
 */
export const orders = tableOf(
  [col('id', 'integer', { isKey: true }), col('total', 'numeric(10,2)'), col('note', 'text')],
  ['id'],
  { schema: 'public', table: 'orders' },
);
export const lines = tableOf([col('id', 'bigint', { isKey: true }), col('sku', 'text')], ['id'], {
  schema: 'shop',
  table: 'lines',
});

export const copyLines = (rows: Row[], table: TableSchema = orders) =>
  rows.map((row) => `${table.columns.map((c) => row[c.name] ?? '\\N').join('\t')}\n`).join('');
export const copyText = (rows: Row[], table: TableSchema = orders) => Readable.from([copyLines(rows, table)]);
export const orderRows = (from: number, to: number): Row[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({
    id: String(from + i),
    total: `${from + i}.50`,
    note: 'n',
  }));

/** Commit `n` of the tests: its commit record at `0/n000` (`lsnText`, as messages carry it), its end 0x10 later. */
export const tx = (n: number) => ({
  commitLsn: BigInt(n) * 0x1000n,
  lsnText: `0/${n.toString(16).toUpperCase()}000`,
  end: BigInt(n) * 0x1000n + 0x10n,
  xid: 1000 + n,
  commitTime: `2024-05-01T12:00:${String(n % 60).padStart(2, '0')}Z`,
});
export type Tx = ReturnType<typeof tx>;
export const ev = (t: Tx, c: Partial<ChangeEvent> & Pick<ChangeEvent, 'op'>): ChangeEvent => ({
  table: orders,
  commitLsn: t.commitLsn,
  xid: t.xid,
  commitTime: t.commitTime,
  ...c,
});
