import { describe, expect, it } from 'vitest';
import type { ChangeEvent, TableRef, TableSchema } from '../../src/core/change.js';
import {
  changeEnvelopes,
  envelopeText,
  jsonOf,
  type Numbering,
  RawJson,
  readEnvelope,
  snapshotEventId,
} from '../../src/sinks/change-envelope.js';
import { col, tableOf } from '../support/table-schemas.js';

const orders = tableOf(
  [
    col('id', 'bigint', { isKey: true }),
    col('total', 'numeric(12,2)'),
    col('paid', 'boolean'),
    col('qty', 'integer'),
    col('meta', 'jsonb'),
    col('blob', 'bytea'),
    col('tags', 'text[]'),
    col('at', 'timestamp with time zone'),
    col('notes', 'text'),
  ],
  ['id'],
  { schema: 'public', table: 'orders' },
);
const items = tableOf(
  [col('order_id', 'integer'), col('line', 'integer'), col('sku', 'text')],
  ['order_id', 'line'],
  {
    schema: 'shop',
    table: 'items',
  },
);
const schemas = new Map<string, TableSchema>([
  ['public.orders', orders],
  ['shop.items', items],
]);
const schemaOf = (ref: TableRef) => schemas.get(`${ref.schema}.${ref.table}`) as TableSchema;

const NONE: Numbering = new Map();

const TX = { commitLsn: 0x16b3748n, xid: 700, commitTime: '2024-05-01T12:00:00.123456Z' };
const change = (c: Partial<ChangeEvent> & Pick<ChangeEvent, 'op'>, tx = TX): ChangeEvent => ({
  table: orders,
  ...tx,
  ...c,
});

describe('change envelope', () => {
  it('types the values: exact numerics and 64-bit integers as strings, JSON as JSON, bytes as base64', () => {
    const { envelopes } = changeEnvelopes(
      [
        change({
          op: 'insert',
          after: {
            id: '9007199254740993',
            total: '19.90',
            paid: 't',
            qty: '3',
            meta: '{"a": [1, {"b": null}]}',
            blob: '\\x00ff10',
            tags: '{red,"blue green",NULL}',
            at: '2024-05-01 12:00:00.5+00',
            notes: null,
          },
        }),
      ],
      schemaOf,
      NONE,
    );
    expect(envelopes).toEqual([
      {
        table: orders,
        sequence: 0,
        envelope: {
          id: '0/16B3748/public/orders/0',
          op: 'insert',
          table: 'public.orders',
          key: { id: '9007199254740993' },
          before: null,
          after: {
            id: '9007199254740993',
            total: '19.90',
            paid: true,
            qty: 3,
            meta: new RawJson('{"a": [1, {"b": null}]}'),
            blob: 'AP8Q',
            tags: ['red', 'blue green', null],
            at: '2024-05-01T12:00:00.5Z',
            notes: null,
          },
          lsn: '0/16B3748',
          commit_time: '2024-05-01T12:00:00.123456Z',
        },
      },
    ]);
  });

  it('writes a JSON value as the source wrote it: every digit, duplicate keys, arrays of JSON', () => {
    const docs = tableOf(
      [col('id', 'integer', { isKey: true }), col('doc', 'json'), col('docs', 'jsonb[]')],
      ['id'],
      { schema: 'public', table: 'docs' },
    );
    const values = [
      '9007199254740993',
      '12345678901234567890123456789',
      '1e1000',
      '-0',
      '{"a": 1, "a": 2}',
      '[0.1000000000000000055511151231257827]',
      '"\\u00e9 \\" \\\\"',
    ];
    for (const doc of values) {
      const { envelopes } = changeEnvelopes(
        [
          change({
            op: 'insert',
            table: docs,
            after: { id: '1', doc, docs: `{"${doc.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}",NULL}` },
          }),
        ],
        () => docs,
        NONE,
      );
      const text = envelopeText(envelopes[0]?.envelope as never);
      expect(text).toContain(`"doc":${doc},`);
      expect(text).toContain(`"docs":[${doc},null]`);
      // Still one JSON document, whatever the values.
      expect(JSON.parse(text).after.id).toBe(1);
    }
  });

  it('writes float NaN and infinities as strings, which JSON has no number for', () => {
    expect([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5].map(jsonOf)).toEqual([
      'NaN',
      'Infinity',
      '-Infinity',
      1.5,
    ]);
    expect(jsonOf([[1n, null], [Buffer.from('hi')]])).toEqual([['1', null], ['aGk=']]);
  });

  it("keeps the sign of a float zero, an array's lower bounds, and dates ISO 8601 cannot write", () => {
    const edges = tableOf(
      [
        col('id', 'integer', { isKey: true }),
        col('r', 'real'),
        col('d', 'double precision'),
        col('ds', 'double precision[]'),
        col('lb', 'integer[]'),
        col('lbj', 'jsonb[]'),
        col('day', 'date'),
        col('at', 'timestamp without time zone'),
        col('atz', 'timestamp with time zone'),
      ],
      ['id'],
      { schema: 'public', table: 'edges' },
    );
    const after = {
      id: '1',
      r: '-0',
      d: '-0',
      ds: '{-0,0,NULL}',
      lb: '[0:1]={1,2}',
      lbj: '[-2:-2]={"{\\"a\\": 1}"}',
      day: '0044-03-15 BC',
      at: '294276-12-31 23:59:59',
      atz: '-infinity',
    };
    const { envelopes } = changeEnvelopes([change({ op: 'insert', table: edges, after })], () => edges, NONE);
    const text = envelopeText(envelopes[0]?.envelope as never);
    expect(text).toContain('"r":-0,"d":-0,"ds":[-0,0,null],');
    const parsed = JSON.parse(text).after;
    expect(Object.is(parsed.r, -0)).toBe(true);
    expect(parsed).toMatchObject({
      lb: '[0:1]={1,2}',
      lbj: after.lbj,
      day: '0044-03-15 BC',
      at: '294276-12-31 23:59:59',
      atz: '-infinity',
    });
  });

  it('keys an update by the row before it, and a delete by its key; before only with REPLICA IDENTITY FULL', () => {
    const { envelopes } = changeEnvelopes(
      [
        change({ op: 'update', after: { id: '1', qty: '2' } }),
        change({ op: 'update', key: { id: '1' }, after: { id: '5', qty: '2' } }),
        change({
          op: 'update',
          before: { id: '5', qty: '2' },
          key: { id: '5', qty: '2' },
          after: { id: '5', qty: '3' },
        }),
        change({ op: 'delete', key: { id: '5' } }),
      ],
      schemaOf,
      NONE,
    );
    expect(envelopes.map(({ envelope: e }) => [e.op, e.key, e.before, e.after])).toEqual([
      ['update', { id: '1' }, null, { id: '1', qty: 2 }],
      ['update', { id: '1' }, null, { id: '5', qty: 2 }],
      ['update', { id: '5' }, { id: '5', qty: 2 }, { id: '5', qty: 3 }],
      ['delete', { id: '5' }, null, null],
    ]);
  });

  it('lists unchanged TOAST columns in `unchanged`, absent from `after`', () => {
    const { envelopes } = changeEnvelopes(
      [change({ op: 'update', after: { id: '1', qty: '4' }, unchangedToast: ['notes', 'meta'] })],
      schemaOf,
      NONE,
    );
    const [first] = envelopes;
    expect(first?.envelope.after).toEqual({ id: '1', qty: 4 });
    expect(first?.envelope.unchanged).toEqual(['notes', 'meta']);
    expect(Object.keys(first?.envelope ?? {})).toEqual([
      'id',
      'op',
      'table',
      'key',
      'before',
      'after',
      'unchanged',
      'lsn',
      'commit_time',
    ]);
    const plain = changeEnvelopes([change({ op: 'insert', after: { id: '1' } })], schemaOf, NONE);
    expect(plain.envelopes[0]?.envelope).not.toHaveProperty('unchanged');
  });

  it('sends one truncate message per truncated table', () => {
    const { envelopes } = changeEnvelopes(
      [change({ op: 'truncate', table: orders, tables: [orders, items] })],
      schemaOf,
      NONE,
    );
    expect(envelopes.map(({ table, envelope: e }) => [table, e.id, e.op, e.table, e.key, e.after])).toEqual([
      [orders, '0/16B3748/public/orders/0', 'truncate', 'public.orders', null, null],
      [items, '0/16B3748/shop/items/0', 'truncate', 'shop.items', null, null],
    ]);
  });

  it('numbers the messages of each table within their transaction, going on across the batches of one transaction', () => {
    const t2 = { commitLsn: 0x16b4000n, xid: 701, commitTime: '2024-05-01T12:00:01Z' };
    const t3 = { commitLsn: 0x16c0000n, xid: 702, commitTime: '2024-05-01T12:00:02Z' };
    const all = [
      change({ op: 'insert', after: { id: '1' } }),
      change({ op: 'insert', after: { id: '2' } }, t2),
      change({ op: 'insert', table: items, after: { order_id: '2', line: '1' } }, t2),
      change({ op: 'insert', after: { id: '3' } }, t2),
      change({ op: 'insert', after: { id: '4' } }, t2),
      change({ op: 'delete', key: { id: '4' } }, t3),
    ];
    const whole = changeEnvelopes(all, schemaOf, NONE);
    const ids = whole.envelopes.map((e) => e.envelope.id);
    expect(ids).toEqual([
      '0/16B3748/public/orders/0',
      '0/16B4000/public/orders/0',
      '0/16B4000/shop/items/0',
      '0/16B4000/public/orders/1',
      '0/16B4000/public/orders/2',
      '0/16C0000/public/orders/0',
    ]);
    expect(whole.numbering).toEqual(
      new Map([
        ['public/orders', { commitLsn: '0/16C0000', count: 1 }],
        ['shop/items', { commitLsn: '0/16B4000', count: 1 }],
      ]),
    );

    // Cut inside t2, as a transaction too large for one batch is: the ids are the same.
    const first = changeEnvelopes(all.slice(0, 4), schemaOf, NONE);
    const carried = structuredClone(first.numbering);
    expect(carried.get('public/orders')).toEqual({ commitLsn: '0/16B4000', count: 2 });
    const second = changeEnvelopes(all.slice(4), schemaOf, first.numbering);
    expect([...first.envelopes, ...second.envelopes].map((e) => e.envelope.id)).toEqual(ids);
    expect(second.envelopes.map((e) => e.sequence)).toEqual([2, 0]);
    // The carried numbering is not changed by the next batch: a failed batch is numbered again the same.
    expect(first.numbering).toEqual(carried);
  });

  it("numbers a table's changes held back and published after the rest of their transactions (a backfill) alike", () => {
    const t2 = { commitLsn: 0x16b4000n, xid: 701, commitTime: '2024-05-01T12:00:01Z' };
    const t3 = { commitLsn: 0x16c0000n, xid: 702, commitTime: '2024-05-01T12:00:02Z' };
    const item = (tx: typeof t2, line: string) =>
      change({ op: 'insert', table: items, after: { order_id: '1', line } }, tx);
    const inOrder = changeEnvelopes(
      [item(t2, '1'), change({ op: 'insert', after: { id: '1' } }, t2), item(t2, '2'), item(t3, '1')],
      schemaOf,
      NONE,
    );
    // The orders change goes out first; the held items changes come in two later batches.
    const others = changeEnvelopes([change({ op: 'insert', after: { id: '1' } }, t2)], schemaOf, NONE);
    const held1 = changeEnvelopes([item(t2, '1')], schemaOf, others.numbering);
    const held2 = changeEnvelopes([item(t2, '2'), item(t3, '1')], schemaOf, held1.numbering);
    const ids = (r: { envelopes: { envelope: { id: string } }[] }) => r.envelopes.map((e) => e.envelope.id);
    expect([...ids(others), ...ids(held1), ...ids(held2)].sort()).toEqual(ids(inOrder).sort());
    expect(ids(held2)).toEqual(['0/16B4000/shop/items/1', '0/16C0000/shop/items/0']);
  });

  it('types a column the sink does not know (added at the source) as the source text', () => {
    const { envelopes } = changeEnvelopes(
      [change({ op: 'insert', after: { id: '1', added: '42' } })],
      schemaOf,
      NONE,
    );
    expect(envelopes[0]?.envelope.after).toEqual({ id: '1', added: '42' });
  });

  it('keeps a column named __proto__ as a column', () => {
    const after = JSON.parse('{"id":"1","__proto__":"x"}');
    const { envelopes } = changeEnvelopes([change({ op: 'insert', after })], schemaOf, NONE);
    expect(JSON.stringify(envelopes[0]?.envelope.after)).toBe('{"id":"1","__proto__":"x"}');
  });
});

describe('read envelope', () => {
  it('is a snapshot row named by its table and key, with no position', () => {
    expect(readEnvelope(items, { order_id: '7', line: '2', sku: 'A-1' })).toEqual({
      id: 'snapshot/shop/items/["7","2"]',
      op: 'read',
      table: 'shop.items',
      key: { order_id: 7, line: 2 },
      before: null,
      after: { order_id: 7, line: 2, sku: 'A-1' },
      lsn: null,
      commit_time: null,
    });
  });

  it('encodes / and % in names, so that two tables never share an id', () => {
    const a = tableOf([col('id', 'integer')], ['id'], { schema: 'a/b', table: 'c' });
    const b = tableOf([col('id', 'integer')], ['id'], { schema: 'a', table: 'b/c' });
    expect(snapshotEventId(a, { id: '1' })).toBe('snapshot/a%2Fb/c/["1"]');
    expect(snapshotEventId(b, { id: '1' })).toBe('snapshot/a/b%2Fc/["1"]');
    expect(
      snapshotEventId(tableOf([col('id', 'integer')], ['id'], { schema: '%2F', table: 't' }), { id: '1' }),
    ).toBe('snapshot/%252F/t/["1"]');
  });
});
