import { describe, expect, it } from 'vitest';
import type { ChangeEvent, ColumnSchema, EncodedRow, Row, TableSchema } from '../../src/core/change.js';
import { copyTextOf } from '../../src/core/copy-text.js';
import {
  type InsertRow,
  insertValues,
  MIN_ROWS_FOR_COPY,
  planBatch,
  type TargetTable,
} from '../../src/sinks/postgres/apply-plan.js';

const col = (name: string, isKey = false): ColumnSchema => ({
  name,
  typeName: isKey ? 'integer' : 'text',
  typeOid: 0,
  nullable: !isKey,
  isKey,
});

const items: TableSchema = {
  schema: 'public',
  table: 'items',
  columns: [col('id', true), col('name'), col('body')],
  keyColumns: ['id'],
};
const other: TableSchema = { ...items, table: 'other' };

const tables = new Map<string, TargetTable>(
  [items, other].map((t) => [
    t.table,
    { source: t, target: { schema: 'r', table: t.table }, keys: [t.columns[0] as ColumnSchema] },
  ]),
);
const lookup = (ref: { table: string }): TargetTable => {
  const table = tables.get(ref.table);
  if (!table) throw new Error(`unknown ${ref.table}`);
  return table;
};

const base = { commitLsn: 2n, xid: 1, commitTime: '2024-01-01T00:00:00Z' };
const ins = (after: Row, table = items): ChangeEvent => ({ ...base, op: 'insert', table, after });
const upd = (after: Row, extra: Partial<ChangeEvent> = {}): ChangeEvent => ({
  ...base,
  op: 'update',
  table: items,
  after,
  ...extra,
});
const del = (key: Row, table = items): ChangeEvent => ({ ...base, op: 'delete', table, key });

const plan = (changes: ChangeEvent[], maxRows?: number) =>
  planBatch(changes, lookup, maxRows).map((s) => ({
    verb: s.text.split(' ')[0],
    text: s.text,
    values: s.values,
  }));

describe('planning a batch', () => {
  it('offers a COPY for a group of inserts only, and only from MIN_ROWS_FOR_COPY rows on', () => {
    const rows = (count: number, from = 1) =>
      Array.from({ length: count }, (_, i) => ins({ id: String(from + i), name: 'n', body: 'b' }));
    const [copied] = planBatch(rows(MIN_ROWS_FOR_COPY), lookup);
    expect(copied?.copy?.text).toBe('COPY "r"."items" ("id", "name", "body") FROM STDIN');
    expect(copied?.copy?.rows).toHaveLength(MIN_ROWS_FOR_COPY);
    expect(copied?.copy?.rows[0]).toEqual(['1', 'n', 'b']);
    expect(planBatch(rows(MIN_ROWS_FOR_COPY - 1), lookup)[0]?.copy).toBeUndefined();
    // An update among them makes it an upsert group: its key may be there already.
    const mixed = [...rows(MIN_ROWS_FOR_COPY), upd({ id: '1', name: 'm', body: 'b' })];
    expect(planBatch(mixed, lookup)[0]?.copy).toBeUndefined();
    // Every statement of a group split by size carries its own rows.
    const split = planBatch(rows(MIN_ROWS_FOR_COPY * 2), lookup, MIN_ROWS_FOR_COPY);
    expect(split.map((s) => s.copy && insertValues(s.copy.rows[0] as InsertRow)[0])).toEqual([
      '1',
      String(MIN_ROWS_FOR_COPY + 1),
    ]);
  });

  it('takes inserted rows still encoded into the COPY as they are, decoding none of them', () => {
    const names = ['id', 'name', 'body'];
    let decoded = 0;
    /** An insert whose row is encoded; reading `after` is counted. */
    const encodedInsert = (values: string[], columns = names): ChangeEvent => {
      const row: EncodedRow = {
        columns,
        byteLength: values.join('').length,
        text: (i) => values[i] ?? null,
        values: () => [...values],
        integer: (i) => (/^-?\d{1,15}$/.test(values[i] ?? '') ? Number(values[i]) : Number.NaN),
        copyTextBound: 2 * values.join('\t').length + 1,
        writeCopyText: (out, at) => at + out.write(`${values.join('\t')}\n`, at),
      };
      return {
        ...base,
        op: 'insert',
        table: items,
        encoded: row,
        get after(): Row {
          decoded++;
          return Object.fromEntries(columns.map((c, i) => [c, values[i] ?? null]));
        },
      };
    };
    const changes = Array.from({ length: MIN_ROWS_FOR_COPY }, (_, i) =>
      encodedInsert([String(i + 1), 'n', 'b']),
    );
    const [copied] = planBatch(changes, lookup);
    expect(copied?.copy?.rows[0]).toBe(changes[0]?.encoded);
    expect(decoded).toBe(0);
    expect(
      copyTextOf(copied?.copy?.rows ?? [])
        .toString()
        .split('\n')[1],
    ).toBe('2\tn\tb');
    // The upsert's parameters, when the COPY meets a key already there, come from the same rows.
    expect(copied?.values[0]?.slice(0, 2)).toEqual(['1', '2']);
    // Keys seen twice are folded, as decoded rows are: the later row wins.
    const twice = planBatch([...changes, encodedInsert(['1', 'again', 'b'])], lookup);
    expect(twice.some((s) => s.copy)).toBe(false);
    // Rows of another shape than the table's (a column the sink does not have) are read whole.
    const otherShape = ['id', 'body', 'name'];
    const [reordered] = planBatch(
      Array.from({ length: MIN_ROWS_FOR_COPY }, (_, i) =>
        encodedInsert([String(i + 1), 'b', 'n'], otherShape),
      ),
      lookup,
    );
    expect(reordered?.copy?.rows[0]).toEqual(['1', 'n', 'b']);
  });

  it('offers a COPY for the rows a batch inserts beside the rows it updates, from MIN_ROWS_FOR_COPY of them on', () => {
    // pgbench-like: each transaction updates a row that is there and inserts a new one.
    const changes = (count: number) =>
      Array.from({ length: count }, (_, i) => [
        upd({ id: String(i + 1), name: `total ${i}`, body: 'x' }),
        ins({ id: String(100_000 + i), name: 'new', body: 'y' }),
      ]).flat();
    const steps = planBatch(changes(MIN_ROWS_FOR_COPY), lookup);
    expect(steps.map((s) => [s.text.split(' ')[0], s.copy ? 'copy' : 'statement'])).toEqual([
      ['INSERT', 'statement'],
      ['INSERT', 'copy'],
    ]);
    expect((steps[0]?.values as string[][] | undefined)?.[0]).toEqual(
      Array.from({ length: MIN_ROWS_FOR_COPY }, (_, i) => String(i + 1)),
    );
    expect(steps[1]?.copy?.rows.map((r) => insertValues(r)[0])).toEqual(
      Array.from({ length: MIN_ROWS_FOR_COPY }, (_, i) => String(100_000 + i)),
    );
    // Fewer inserts ride with the upsert: one statement, no COPY.
    const fewer = planBatch(changes(MIN_ROWS_FOR_COPY - 1), lookup);
    expect(fewer).toHaveLength(1);
    expect(fewer[0]?.copy).toBeUndefined();
    expect((fewer[0]?.values as string[][] | undefined)?.[0]).toHaveLength(2 * (MIN_ROWS_FOR_COPY - 1));
  });

  it('groups consecutive changes of one table and kind into one statement', () => {
    const steps = plan([
      ins({ id: '1', name: 'a', body: 'x' }),
      ins({ id: '2', name: 'b', body: 'y' }),
      upd({ id: '1', name: 'a2', body: 'x' }),
    ]);
    expect(steps).toHaveLength(1);
    expect(steps[0]?.verb).toBe('INSERT');
    // The same key twice: only its last image, a statement cannot touch a row twice.
    expect(steps[0]?.values).toEqual([
      ['1', '2'],
      ['a2', 'b'],
      ['x', 'y'],
    ]);
  });

  it('folds each row to its final state, and applies a truncate in its place', () => {
    const steps = plan([
      ins({ id: '1', name: 'a', body: null }),
      del({ id: '1' }),
      ins({ id: '1', name: 'b', body: null }, other),
      ins({ id: '1', name: 'c', body: null }),
      { ...base, op: 'truncate', table: other, tables: [other, items] },
      ins({ id: '3', name: 'd', body: null }),
    ]);
    // Insert, delete, insert of one key is its last image; the truncate comes after what preceded it.
    expect(steps.map((s) => s.verb)).toEqual(['INSERT', 'INSERT', 'TRUNCATE', 'INSERT']);
    expect(steps[0]?.text).toContain('"r"."items"');
    expect(steps[0]?.values).toEqual([['1'], ['c'], [null]]);
    expect(steps[1]?.text).toContain('"r"."other"');
    expect(steps[2]?.text).toBe('TRUNCATE "r"."other", "r"."items"');
    expect(steps[3]?.values).toEqual([['3'], ['d'], [null]]);
  });

  it('writes interleaved changes of many transactions as one statement per kind', () => {
    // pgbench-like: every transaction updates a shared row, inserts one and deletes an older one.
    const changes: ChangeEvent[] = [];
    for (let i = 1; i <= 100; i++) {
      changes.push(upd({ id: '0', name: `total ${i}`, body: 'x' }));
      changes.push(ins({ id: String(i), name: 'new', body: 'y' }));
      if (i % 2 === 0) changes.push(del({ id: String(i - 1) }));
    }
    const steps = plan(changes);
    expect(steps.map((s) => s.verb)).toEqual(['DELETE', 'INSERT']);
    expect(steps[0]?.values).toEqual([Array.from({ length: 50 }, (_, i) => String(2 * i + 1))]);
    const [ids, names] = (steps[1]?.values ?? []) as string[][];
    expect(ids?.[0]).toBe('0');
    expect(names?.[0]).toBe('total 100');
    expect(ids).toEqual(['0', ...Array.from({ length: 50 }, (_, i) => String(2 * i + 2))]);
  });

  it('merges an update that did not send every column into the earlier image of its row', () => {
    const steps = plan([
      ins({ id: '1', name: 'a', body: 'long' }),
      upd({ id: '1', name: 'b' }, { unchangedToast: ['body'] }),
      upd({ id: '2', name: 'n2' }, { unchangedToast: ['body'] }),
      upd({ id: '2', body: 'b2' }, { unchangedToast: ['name'] }),
      upd({ id: '3', name: 'n3' }, { unchangedToast: ['body'] }),
      del({ id: '3' }),
    ]);
    expect(steps.map((s) => s.verb)).toEqual(['DELETE', 'INSERT', 'UPDATE']);
    expect(steps[0]?.values).toEqual([['3']]);
    // The insert's image with the update's new name, the TOAST column from the insert.
    expect(steps[1]?.values).toEqual([['1'], ['b'], ['long']]);
    // Two partial updates of one row: the columns of both, each its latest value.
    expect(steps[2]?.values).toEqual([['2'], ['n2'], ['b2'], ['2']]);
  });

  it('never writes unchanged TOAST columns and updates those rows in place', () => {
    const steps = plan([
      upd({ id: '1', name: 'n1' }, { unchangedToast: ['body'] }),
      upd({ id: '2', name: 'n2', body: 'ignored' }, { unchangedToast: ['body'] }),
      upd({ id: '3', name: 'n3', body: 'b3' }),
    ]);
    expect(steps.map((s) => s.verb)).toEqual(['INSERT', 'UPDATE']);
    expect(steps[1]?.text).not.toContain('"body"');
    expect(steps[1]?.values).toEqual([
      ['1', '2'],
      ['n1', 'n2'],
      ['1', '2'],
    ]);
  });

  it('skips an update that sends nothing but unchanged TOAST columns', () => {
    const steps = plan([
      upd({ name: null, body: null }, { key: { id: '1' }, unchangedToast: ['id', 'name', 'body'] }),
    ]);
    expect(steps).toEqual([]);
  });

  it('separates updates with different sets of present columns', () => {
    const steps = plan([
      upd({ id: '1', name: 'n1' }, { unchangedToast: ['body'] }),
      upd({ id: '2', body: 'b2' }, { unchangedToast: ['name'] }),
    ]);
    expect(steps.map((s) => s.text.match(/SET "(\w+)"/)?.[1])).toEqual(['id', 'id']);
    expect(steps[0]?.text).toContain('"name" =');
    expect(steps[1]?.text).toContain('"body" =');
  });

  it('moves a row whose key changed: delete the old key, upsert the new', () => {
    const steps = plan([upd({ id: '9', name: 'n', body: 'b' }, { key: { id: '1' } })]);
    expect(steps.map((s) => s.verb)).toEqual(['DELETE', 'INSERT']);
    expect(steps[0]?.values).toEqual([['1']]);
    expect(steps[1]?.values[0]).toEqual(['9']);
  });

  it('moves a row with TOAST columns missing by updating it in place at its old key', () => {
    const steps = plan([upd({ id: '9', name: 'n' }, { key: { id: '1' }, unchangedToast: ['body'] })]);
    expect(steps).toHaveLength(1);
    expect(steps[0]?.verb).toBe('UPDATE');
    expect(steps[0]?.values).toEqual([['9'], ['n'], ['1']]);
  });

  it('splits big groups into several statements', () => {
    const changes = Array.from({ length: 5 }, (_, i) => ins({ id: String(i), name: null, body: null }));
    const steps = plan(changes, 2);
    expect(steps.map((s) => s.values[0])).toEqual([['0', '1'], ['2', '3'], ['4']]);
  });

  it('refuses unknown tables, unknown columns and rows without key', () => {
    expect(() => plan([ins({ id: '1' }, { ...items, table: 'nope' })])).toThrow(/unknown nope/);
    expect(() => plan([ins({ id: '1', extra: 'x' })])).toThrow(
      /"extra" of public.items is not in its schema/,
    );
    expect(() => plan([ins({ name: 'x' })])).toThrow(/lacks key column "id"/);
    expect(() => plan([del({ name: 'x' })])).toThrow(/lacks key column "id"/);
  });

  it('plans a batch of inserts alone as one statement per table, rows in arrival order', () => {
    const steps = planBatch(
      [
        ins({ id: '2', name: 'b', body: null }),
        ins({ id: '1', name: 'o', body: 'x' }, other),
        ins({ id: '1', name: 'a', body: 'y' }),
      ],
      lookup,
    );
    expect(steps.map((s) => s.text.split(' ')[2])).toEqual(['"r"."items"', '"r"."other"']);
    expect(steps[0]?.values).toEqual([
      ['2', '1'],
      ['b', 'a'],
      [null, 'y'],
    ]);
    expect(steps[1]?.values).toEqual([['1'], ['o'], ['x']]);
  });

  it('folds inserts of one key that come twice (a source without a unique key) to the last', () => {
    const steps = plan([
      ins({ id: '1', name: 'first', body: null }),
      ins({ id: '1', name: 'last', body: null }),
    ]);
    expect(steps).toHaveLength(1);
    expect(steps[0]?.values).toEqual([['1'], ['last'], [null]]);
  });

  it('finds a key that comes again after keys in ascending order, or among text keys', () => {
    const rows = (...ids: string[]) => plan(ids.map((id, i) => ins({ id, name: `n${i}`, body: null })));
    expect(rows('1', '2', '3', '2')[0]?.values).toEqual([
      ['1', '2', '3'],
      ['n0', 'n3', 'n2'],
      [null, null, null],
    ]);
    expect(rows('3', '1', '3')[0]?.values[1]).toEqual(['n2', 'n1']);
    expect(rows('b', 'a', 'b')[0]?.values[1]).toEqual(['n2', 'n1']);
    // In order, or not, distinct keys stay in arrival order.
    expect(rows('1', '2', '10')[0]?.values[0]).toEqual(['1', '2', '10']);
    expect(rows('10', '9', 'x')[0]?.values[0]).toEqual(['10', '9', 'x']);
  });

  it('writes an insert without every column by the columns it has, among whole ones', () => {
    const steps = plan([ins({ id: '1', name: 'whole', body: 'b' }), ins({ id: '2', name: 'part' })]);
    expect(steps.map((s) => s.values)).toEqual([
      [['1'], ['whole'], ['b']],
      [['2'], ['part']],
    ]);
  });

  it('tells a null key from the text "null"', () => {
    const steps = plan([del({ id: 'null' }), del({ id: 'null' }), del({ id: '"null"' })]);
    expect(steps[0]?.values).toEqual([['null', '"null"']]);
  });
});
