import { describe, expect, it } from 'vitest';
import { binaryCopyFits } from '../../src/sinks/postgres/binary-copy-types.js';
import { RecentCopyBinary } from '../../src/sinks/postgres/recent-copy-binary.js';
import { refusedCopyLine } from '../../src/sinks/postgres/refused-copy-line.js';
import { binaryCopyMessages, int64, messageChunks } from '../support/copy-binary.js';
import { col, tableOf } from '../support/table-schemas.js';

const table = tableOf(
  [
    col('id', 'bigint', { isKey: true, typeOid: 20 }),
    col('code', 'uuid', { isKey: true, typeOid: 2950 }),
    col('note', 'text', { typeOid: 25 }),
  ],
  ['id', 'code'],
  { schema: 'public', table: 'events' },
);

const uuid = (i: number) => Buffer.from(i.toString(16).padStart(32, '0'), 'hex');
const tuple = (i: number): (Buffer | null)[] => [int64(BigInt(i)), uuid(i), Buffer.from('x'.repeat(i % 97))];

function sent(count: number, perChunk: number): RecentCopyBinary {
  const recent = new RecentCopyBinary();
  const messages = binaryCopyMessages(Array.from({ length: count }, (_, i) => tuple(i + 1)));
  for (const chunk of messageChunks(messages, perChunk)) recent.add(chunk);
  return recent;
}

describe('a binary snapshot tuple the server refuses', () => {
  it('is found by number among the last megabytes sent, never a wrong one once let go', () => {
    const recent = sent(300_000, 611);
    for (const n of [300_000, 299_999, 250_000]) {
      expect(recent.keyOf(table, n)).toEqual({
        id: String(n),
        code: `00000000-0000-0000-0000-${n.toString(16).padStart(12, '0')}`,
      });
    }
    for (const n of [1, 1000, 50_000, 300_001]) expect(recent.keyOf(table, n)).toBeUndefined();
  });

  it('is found whatever the messages per chunk, the first (after the header) and NULLs included', () => {
    const messages = binaryCopyMessages([tuple(1), [int64(2n), null, null], tuple(3)]);
    for (const perChunk of [1, 2, 4]) {
      const recent = new RecentCopyBinary();
      for (const chunk of messageChunks(messages, perChunk)) recent.add(chunk);
      expect(recent.keyOf(table, 1)?.id).toBe('1');
      expect(recent.keyOf(table, 2)).toEqual({ id: '2', code: null });
      expect(recent.tuple(2)).toEqual([int64(2n), null, null]);
      expect(recent.keyOf(table, 3)?.id).toBe('3');
      // The trailer is no tuple, nor is what was never sent.
      expect([recent.tuple(4), recent.tuple(5)]).toEqual([undefined, undefined]);
    }
  });

  it('names the table, the key and the column the server names, as a text line does', () => {
    const recent = sent(3, 2);
    const error = Object.assign(new Error('value too long for type character varying(2)'), {
      code: '22001',
      where: 'COPY events, line 2, column note',
    });
    expect(refusedCopyLine(table, recent, error)?.message).toBe(
      'the sink refused the change of public.events with key (id, code)=(2, 00000000-0000-0000-0000-000000000002): ' +
        'column "note": value too long for type character varying(2)',
    );
    const gone = Object.assign(new Error('null value'), { code: '23502', where: 'COPY events, line 900' });
    expect(refusedCopyLine(table, recent, gone)?.message).toBe(
      'the sink refused the change of public.events: null value (line 900 of the snapshot partition)',
    );
  });
});

describe('whether a snapshot goes in binary', () => {
  const target = (note: string) => ({
    ...table,
    columns: table.columns.map((c) => (c.name === 'note' ? { ...c, typeName: note } : c)),
  });

  it('it does into columns of the very types of the source', () => {
    expect(binaryCopyFits(table, target('text'))).toBe(true);
  });

  it('it does not into another type, nor of an unportable type, nor with a key it cannot name', () => {
    expect(binaryCopyFits(table, target('character varying(10)'))).toBe(false);
    const arrays = tableOf(
      [col('id', 'bigint', { isKey: true, typeOid: 20 }), col('tags', 'text[]', { typeOid: 1009 })],
      ['id'],
    );
    expect(binaryCopyFits(arrays, arrays)).toBe(false);
    const dated = tableOf(
      [col('day', 'date', { isKey: true, typeOid: 1082 }), col('n', 'integer', { typeOid: 23 })],
      ['day'],
    );
    expect(binaryCopyFits(dated, dated)).toBe(false);
  });
});
