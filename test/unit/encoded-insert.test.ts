import { describe, expect, it } from 'vitest';
import type { ChangeEvent, ColumnValue } from '../../src/core/change.js';
import { copyTextOf } from '../../src/core/copy-text.js';
import { liveAssemblerEachTest } from '../support/live-assembler.js';
import { pgoutput, type RelationInput, type TupleInput } from '../support/pgoutput-messages.js';

const ROWS: RelationInput = {
  relationId: 9,
  table: 'rows',
  columns: [{ name: 'id', key: true, typeOid: 20 }, { name: 'v' }, { name: 'w' }],
};

// What COPY text escapes, multibyte UTF-8, an empty string and NULL.
const AWKWARD: ColumnValue[][] = [
  ['1', 'tab\there', null],
  ['2', 'new\nline and \r return', 'back\\slash \\N'],
  ['3', '', 'é 日本 🙂'],
  ['4', '\\', '\t\n\r\\'],
];

describe('an insert of a streamed transaction kept encoded', () => {
  const live = liveAssemblerEachTest('encoded-insert');

  /** The changes of the streamed inserts of `rows`, as they arrive. */
  const arrived = (rows: TupleInput[][]): ChangeEvent[] => {
    for (const message of [
      pgoutput.relation(ROWS),
      pgoutput.streamStart(700, true),
      ...rows.map((values) => pgoutput.insert(9, values, 700)),
      pgoutput.streamStop(),
    ])
      live.assembler().accept(message);
    return live.emitted.flatMap((item) => (item.kind === 'stream-change' ? [item.change] : []));
  };

  it('writes the COPY text the decoded values make, from the bytes as they came', () => {
    const changes = arrived(AWKWARD);
    expect(changes.map((c) => c.encoded !== undefined)).toEqual([true, true, true, true]);
    const encoded = changes.map((c) => c.encoded as NonNullable<ChangeEvent['encoded']>);
    expect(copyTextOf(encoded).toString('utf8')).toBe(copyTextOf(AWKWARD).toString('utf8'));
    expect(encoded.map((row) => row.values())).toEqual(AWKWARD);
    expect(encoded.map((row) => row.text(2))).toEqual(AWKWARD.map((row) => row[2]));
    expect(encoded[0]?.columns).toEqual(['id', 'v', 'w']);
    // Rows of one shape share their names, so that a sink compares shapes by identity.
    expect(encoded[1]?.columns).toBe(encoded[0]?.columns);
    // The bound holds for rows of nothing but escaped bytes and NULLs.
    for (const row of [...encoded, ...arrived([['\t\t\t', null, null]]).map((c) => c.encoded)]) {
      const out = Buffer.alloc(row?.copyTextBound ?? 0);
      expect(row?.writeCopyText(out, 0)).toBeLessThanOrEqual(out.length);
    }
  });

  it('reads a plain integer of up to 15 digits as its number, anything else as NaN', () => {
    const rows = arrived([
      ['123', '-45', null],
      ['007', '', '1234567890123456'],
      ['+1', '1e3', '9 '],
    ]).map((c) => c.encoded as NonNullable<ChangeEvent['encoded']>);
    expect(rows.map((row) => [0, 1, 2].map((i) => row.integer(i)))).toEqual([
      [123, -45, Number.NaN],
      [7, Number.NaN, Number.NaN],
      [Number.NaN, Number.NaN, Number.NaN],
    ]);
  });

  it('reads as the decoded insert: after, a spread copy that sets its own, and JSON', () => {
    const [change] = arrived([AWKWARD[1] as ColumnValue[]]);
    const after = { id: '2', v: 'new\nline and \r return', w: 'back\\slash \\N' };
    expect(change?.op).toBe('insert');
    expect(change?.after).toEqual(after);
    expect(change?.table).toEqual({ schema: 'public', table: 'rows' });
    const json = JSON.parse(JSON.stringify(change, (_, v) => (typeof v === 'bigint' ? String(v) : v)));
    expect(json.after).toEqual(after);
    expect(json.op).toBe('insert');
    // A copy that sets its own row is not taken for the encoded one.
    const projected = { ...change, after: { id: '2' } } as ChangeEvent;
    expect(projected.encoded).toBeUndefined();
    // A row set on it replaces the encoded one.
    (change as ChangeEvent).after = { id: '2', v: 'x', w: null };
    expect(change?.encoded).toBeUndefined();
    expect(change?.after).toEqual({ id: '2', v: 'x', w: null });
  });

  it('decodes at once a tuple that is not all text and NULL', () => {
    const [toast] = arrived([['5', 'u!', null]]);
    expect(toast?.encoded).toBeUndefined();
    expect(toast?.unchangedToast).toEqual(['v']);
    // Binary values were never asked for: the whole decode refuses them, as before.
    expect(() => arrived([['6', Buffer.from([1, 2]), null]])).toThrow(/binary tuple data/);
  });
});
