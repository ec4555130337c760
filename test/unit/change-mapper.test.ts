import { describe, expect, it } from 'vitest';
import {
  decodeChange,
  RelationCache,
  type TransactionInfo,
} from '../../src/source/postgres/change-mapper.js';
import { PgoutputProtocolError } from '../../src/source/postgres/errors.js';
import { Reader, readRelation } from '../../src/source/postgres/pgoutput-decoder.js';
import { Msg, pgoutput, type RelationInput } from '../support/pgoutput-messages.js';

const TX: TransactionInfo = {
  xid: 4000000000,
  commitLsn: 0x16b374d848n,
  commitTime: '2024-05-06T07:08:09.123456Z',
};
const COMMIT = { xid: TX.xid, commitLsn: TX.commitLsn, commitTime: TX.commitTime };

/** id (key) and name (key), then note and doc: a composite replica identity. */
const ITEMS: RelationInput = {
  relationId: 7,
  schema: 'shop',
  table: 'items',
  columns: [{ name: 'id', key: true }, { name: 'name', key: true }, { name: 'note' }, { name: 'doc' }],
};
const OTHER: RelationInput = {
  relationId: 4294967295,
  schema: 'x y',
  table: 'Other',
  columns: [{ name: 'id', key: true }],
};

function cache(...relations: RelationInput[]): RelationCache {
  const c = new RelationCache();
  for (const relation of relations) c.set(readRelation(new Reader(pgoutput.relation(relation), 1)));
  return c;
}

/** Decodes a data message built outside a stream block, checking that every byte was read. */
function decode(message: Buffer, relations = cache(ITEMS, OTHER)) {
  const r = new Reader(message, 1);
  const change = decodeChange(
    r,
    String.fromCharCode(message[0] as number) as 'I' | 'U' | 'D' | 'T',
    relations,
    TX,
  );
  expect(r.atEnd).toBe(true);
  return change;
}

describe('decodeChange', () => {
  it('decodes an Insert: null, unchanged TOAST, text, empty text and multi-byte text', () => {
    const message = pgoutput.insert(7, ['1', null, 'héllo € 😀', 'u!']);
    const change = decode(message);
    expect(change).toEqual({
      op: 'insert',
      table: { schema: 'shop', table: 'items' },
      ...COMMIT,
      after: { id: '1', name: null, note: 'héllo € 😀' },
      unchangedToast: ['doc'],
    });
    // Values are copies: the connection reuses its receive buffer, and replayed messages are views.
    message.fill(0);
    expect(change.after).toEqual({ id: '1', name: null, note: 'héllo € 😀' });
    expect(decode(pgoutput.insert(7, ['2', '', '', null])).after).toEqual({
      id: '2',
      name: '',
      note: '',
      doc: null,
    });
  });

  it('decodes an Insert of a stream block after its xid', () => {
    const message = pgoutput.insert(7, ['1', 'a', 'b', 'c'], 701);
    const r = new Reader(message, 5);
    expect(decodeChange(r, 'I', cache(ITEMS), TX)).toMatchObject({
      op: 'insert',
      after: { id: '1', doc: 'c' },
    });
    expect(r.atEnd).toBe(true);
  });

  it('decodes an Update without old tuple, with its key (K) and with the old row (O)', () => {
    expect(decode(pgoutput.update(7, ['1', 'a', 'u!', 'u!']))).toEqual({
      op: 'update',
      table: { schema: 'shop', table: 'items' },
      ...COMMIT,
      after: { id: '1', name: 'a' },
      unchangedToast: ['note', 'doc'],
    });
    // K: the replica identity columns, the others sent as null.
    expect(
      decode(pgoutput.update(7, ['2', 'b', 'x', null], { kind: 'K', values: ['1', 'a', null, null] })),
    ).toEqual({
      op: 'update',
      table: { schema: 'shop', table: 'items' },
      ...COMMIT,
      key: { id: '1', name: 'a' },
      after: { id: '2', name: 'b', note: 'x', doc: null },
    });
    // O (REPLICA IDENTITY FULL): the whole old row, the key taken from it.
    const full = decode(
      pgoutput.update(7, ['1', 'a', 'new', 'u!'], { kind: 'O', values: ['1', 'a', 'old', 'u!'] }),
    );
    expect(full).toEqual({
      op: 'update',
      table: { schema: 'shop', table: 'items' },
      ...COMMIT,
      key: { id: '1', name: 'a' },
      before: { id: '1', name: 'a', note: 'old' },
      after: { id: '1', name: 'a', note: 'new' },
      unchangedToast: ['doc'],
    });
  });

  it('decodes a Delete with its key (K) and with the old row (O)', () => {
    expect(decode(pgoutput.delete(7, { kind: 'K', values: ['5', 'é', null, null] }))).toEqual({
      op: 'delete',
      table: { schema: 'shop', table: 'items' },
      ...COMMIT,
      key: { id: '5', name: 'é' },
    });
    expect(decode(pgoutput.delete(7, { kind: 'O', values: ['5', 'é', 'z', null] }))).toEqual({
      op: 'delete',
      table: { schema: 'shop', table: 'items' },
      ...COMMIT,
      key: { id: '5', name: 'é' },
      before: { id: '5', name: 'é', note: 'z', doc: null },
    });
  });

  it('refuses a Delete without old tuple and an Insert or Update without new tuple', () => {
    expect(() => decode(new Msg('D').u32(7).char('N').tuple(['5', 'a', null, null]).build())).toThrow(
      /delete: expected 'K' or 'O', got 'N'/,
    );
    expect(() => decode(new Msg('I').u32(7).char('K').tuple(['5', 'a', null, null]).build())).toThrow(
      /insert: expected 'N', got 'K'/,
    );
    expect(() =>
      decode(
        new Msg('U')
          .u32(7)
          .char('K')
          .tuple(['5', 'a', null, null])
          .char('O')
          .tuple(['5', 'a', null, null])
          .build(),
      ),
    ).toThrow(/update: expected 'N', got 'O'/);
  });

  it('decodes a Truncate of several relations, whatever its options', () => {
    for (const options of [0, 1, 2, 3]) {
      expect(decode(pgoutput.truncate([7, 4294967295], options))).toEqual({
        op: 'truncate',
        table: { schema: 'shop', table: 'items' },
        tables: [
          { schema: 'shop', table: 'items' },
          { schema: 'x y', table: 'Other' },
        ],
        ...COMMIT,
      });
    }
    expect(() => decode(pgoutput.truncate([]))).toThrow(/truncate of no relation/);
  });

  it('refuses binary values, unknown value kinds and truncated values', () => {
    expect(() => decode(pgoutput.insert(7, ['1', Buffer.from([0, 1, 2, 255]), null, null]))).toThrow(
      /binary tuple data/,
    );
    expect(() =>
      decode(
        pgoutput.update(7, ['1', 'a', null, null], {
          kind: 'K',
          values: [Buffer.from('1'), 'a', null, null],
        }),
      ),
    ).toThrow(/binary tuple data/);
    expect(() => decode(new Msg('I').u32(7).char('N').i16(4).char('x').build())).toThrow(
      /tuple column kind 'x'/,
    );
    expect(() => decode(new Msg('I').u32(7).char('N').i16(4).char('t').i32(10).build())).toThrow(/truncated/);
    expect(() => decode(new Msg('I').u32(7).char('N').i16(4).char('t').i32(-5).build())).toThrow(
      PgoutputProtocolError,
    );
  });

  it('refuses a tuple whose column count differs from its Relation message', () => {
    expect(() => decode(pgoutput.insert(7, ['1', 'a', null]))).toThrow(
      /tuple of shop.items has 3 columns, its Relation message 4/,
    );
    expect(() => decode(pgoutput.delete(7, { kind: 'K', values: ['1'] }))).toThrow(/has 1 columns/);
  });

  it('refuses a change of a relation with no Relation message before it', () => {
    expect(() => decode(pgoutput.insert(8, ['1']))).toThrow(
      /change for relation 8 before its Relation message/,
    );
    expect(() => decode(pgoutput.truncate([7, 8]))).toThrow(/relation 8/);
  });
});

describe('RelationCache', () => {
  it('decodes against the latest Relation message of a relation', () => {
    const relations = cache(ITEMS);
    relations.set(
      readRelation(
        new Reader(
          pgoutput.relation({
            ...ITEMS,
            table: 'items2',
            columns: [{ name: 'id', key: true }, { name: 'added' }],
          }),
          1,
        ),
      ),
    );
    expect(decode(pgoutput.insert(7, ['1', 'x']), relations)).toMatchObject({
      table: { schema: 'shop', table: 'items2' },
      after: { id: '1', added: 'x' },
    });
  });
});
