import { describe, expect, it } from 'vitest';
import { PgoutputProtocolError } from '../../src/source/postgres/errors.js';
import { PgoutputDecoder, pgTimestampToIso } from '../../src/source/postgres/pgoutput-decoder.js';

/** Builds a pgoutput message the way the server lays it out (big-endian). */
class Msg {
  private readonly parts: Buffer[] = [];

  constructor(tag: string) {
    this.char(tag);
  }

  char(c: string): this {
    return this.u8(c.charCodeAt(0));
  }

  u8(v: number): this {
    const b = Buffer.alloc(1);
    b.writeUInt8(v);
    this.parts.push(b);
    return this;
  }

  i16(v: number): this {
    const b = Buffer.alloc(2);
    b.writeInt16BE(v);
    this.parts.push(b);
    return this;
  }

  i32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    this.parts.push(b);
    return this;
  }

  u32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(v);
    this.parts.push(b);
    return this;
  }

  u64(v: bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(v);
    this.parts.push(b);
    return this;
  }

  i64(v: bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(v);
    this.parts.push(b);
    return this;
  }

  str(s: string): this {
    this.parts.push(Buffer.from(s, 'utf8'), Buffer.from([0]));
    return this;
  }

  bytes(b: Buffer): this {
    this.parts.push(b);
    return this;
  }

  /** TupleData: each value null, 'u' (unchanged TOAST), a string (text) or a Buffer (binary). */
  tuple(values: (string | null | 'u!' | Buffer)[]): this {
    this.i16(values.length);
    for (const v of values) {
      if (v === null) this.char('n');
      else if (v === 'u!') this.char('u');
      else if (Buffer.isBuffer(v)) this.char('b').i32(v.length).bytes(v);
      else {
        const text = Buffer.from(v, 'utf8');
        this.char('t').i32(text.length).bytes(text);
      }
    }
    return this;
  }

  build(): Buffer {
    return Buffer.concat(this.parts);
  }
}

// 2024-05-06T07:08:09.123456Z in microseconds since 2000-01-01.
const TS = BigInt(Date.UTC(2024, 4, 6, 7, 8, 9, 123) - Date.UTC(2000, 0, 1)) * 1000n + 456n;
const TS_ISO = '2024-05-06T07:08:09.123456Z';

describe('pgoutput decoder', () => {
  it('converts PostgreSQL timestamps with microsecond precision', () => {
    expect(pgTimestampToIso(0n)).toBe('2000-01-01T00:00:00.000000Z');
    expect(pgTimestampToIso(TS)).toBe(TS_ISO);
    expect(pgTimestampToIso(-1n)).toBe('1999-12-31T23:59:59.999999Z');
    expect(() => pgTimestampToIso(9223372036854775807n)).toThrow(PgoutputProtocolError);
  });

  it('decodes Begin, Commit and Origin', () => {
    const d = new PgoutputDecoder();
    expect(d.decode(new Msg('B').u64(0x16b374d848n).i64(TS).u32(4000000000).build())).toEqual({
      tag: 'begin',
      finalLsn: '16/B374D848',
      commitTime: TS_ISO,
      xid: 4000000000,
    });
    expect(d.decode(new Msg('C').u8(0).u64(0x100n).u64(0x1a8n).i64(TS).build())).toEqual({
      tag: 'commit',
      flags: 0,
      commitLsn: '0/100',
      endLsn: '0/1A8',
      commitTime: TS_ISO,
    });
    expect(
      d.decode(
        new Msg('O')
          .u64(1n << 32n)
          .str('node "a"')
          .build(),
      ),
    ).toEqual({
      tag: 'origin',
      originLsn: '1/0',
      name: 'node "a"',
    });
  });

  it('decodes Relation with odd names, key flags and type modifiers', () => {
    const d = new PgoutputDecoder();
    const buf = new Msg('R')
      .u32(16385)
      .str('My Schema')
      .str('we"ird tä ble')
      .char('i')
      .i16(3)
      .u8(1)
      .str('Id')
      .u32(23)
      .i32(-1)
      .u8(0)
      .str('amount col')
      .u32(1700)
      .i32(786438)
      .u8(1)
      .str('k2')
      .u32(25)
      .i32(-1)
      .build();
    expect(d.decode(buf)).toEqual({
      tag: 'relation',
      relationId: 16385,
      schema: 'My Schema',
      table: 'we"ird tä ble',
      replicaIdentity: 'index',
      columns: [
        { name: 'Id', typeOid: 23, typeMod: -1, isKey: true },
        { name: 'amount col', typeOid: 1700, typeMod: 786438, isKey: false },
        { name: 'k2', typeOid: 25, typeMod: -1, isKey: true },
      ],
    });
    for (const [flag, identity] of [
      ['d', 'default'],
      ['n', 'nothing'],
      ['f', 'full'],
    ] as const) {
      const m = d.decode(new Msg('R').u32(1).str('').str('t').char(flag).i16(0).build());
      expect(m).toMatchObject({ tag: 'relation', schema: '', replicaIdentity: identity, columns: [] });
    }
  });

  it('decodes Type', () => {
    const d = new PgoutputDecoder();
    expect(d.decode(new Msg('Y').u32(90000).str('public').str('mood').build())).toEqual({
      tag: 'type',
      typeOid: 90000,
      schema: 'public',
      name: 'mood',
    });
  });

  it('decodes Insert tuples: null, unchanged TOAST, text and binary', () => {
    const d = new PgoutputDecoder();
    const bin = Buffer.from([0, 1, 2, 255]);
    const buf = new Msg('I').u32(7).char('N').tuple([null, 'u!', 'héllo', '', bin]).build();
    const m = d.decode(buf);
    expect(m).toEqual({
      tag: 'insert',
      relationId: 7,
      values: [
        { kind: 'null' },
        { kind: 'unchanged-toast' },
        { kind: 'text', value: 'héllo' },
        { kind: 'text', value: '' },
        { kind: 'binary', value: bin },
      ],
    });
    // Binary values are copies: the connection reuses its receive buffer.
    buf.fill(0);
    expect(m).toMatchObject({ values: [{}, {}, {}, {}, { value: Buffer.from([0, 1, 2, 255]) }] });
  });

  it('decodes Update without old tuple, with a key (K) and with the old row (O)', () => {
    const d = new PgoutputDecoder();
    expect(d.decode(new Msg('U').u32(7).char('N').tuple(['1', 'u!']).build())).toEqual({
      tag: 'update',
      relationId: 7,
      values: [{ kind: 'text', value: '1' }, { kind: 'unchanged-toast' }],
    });
    expect(
      d.decode(new Msg('U').u32(7).char('K').tuple(['1', null]).char('N').tuple(['2', 'x']).build()),
    ).toEqual({
      tag: 'update',
      relationId: 7,
      old: { kind: 'key', values: [{ kind: 'text', value: '1' }, { kind: 'null' }] },
      values: [
        { kind: 'text', value: '2' },
        { kind: 'text', value: 'x' },
      ],
    });
    expect(
      d.decode(new Msg('U').u32(7).char('O').tuple(['1', 'a']).char('N').tuple(['1', 'b']).build()),
    ).toMatchObject({
      old: { kind: 'full', values: [{ value: '1' }, { value: 'a' }] },
      values: [{ value: '1' }, { value: 'b' }],
    });
  });

  it('decodes Delete with K and O', () => {
    const d = new PgoutputDecoder();
    expect(d.decode(new Msg('D').u32(9).char('K').tuple(['5', null]).build())).toEqual({
      tag: 'delete',
      relationId: 9,
      old: { kind: 'key', values: [{ kind: 'text', value: '5' }, { kind: 'null' }] },
    });
    expect(d.decode(new Msg('D').u32(9).char('O').tuple(['5', 'z']).build())).toMatchObject({
      old: { kind: 'full' },
    });
    expect(() => d.decode(new Msg('D').u32(9).char('N').tuple(['5']).build())).toThrow(PgoutputProtocolError);
  });

  it('decodes Truncate with its options', () => {
    const d = new PgoutputDecoder();
    expect(d.decode(new Msg('T').i32(2).u8(3).u32(10).u32(4294967295).build())).toEqual({
      tag: 'truncate',
      relationIds: [10, 4294967295],
      cascade: true,
      restartIdentity: true,
    });
    expect(d.decode(new Msg('T').i32(1).u8(0).u32(10).build())).toMatchObject({
      cascade: false,
      restartIdentity: false,
    });
  });

  it('decodes logical decoding Message', () => {
    const d = new PgoutputDecoder();
    expect(
      d.decode(new Msg('M').u8(1).u64(0x2000n).str('my.prefix').i32(3).bytes(Buffer.from('abc')).build()),
    ).toEqual({
      tag: 'message',
      transactional: true,
      lsn: '0/2000',
      prefix: 'my.prefix',
      content: Buffer.from('abc'),
    });
  });

  it('reads the xid before data messages only inside a stream block', () => {
    const d = new PgoutputDecoder();
    expect(d.decode(new Msg('S').u32(700).u8(1).build())).toEqual({
      tag: 'stream-start',
      xid: 700,
      firstSegment: true,
    });
    expect(d.inStreamBlock).toBe(true);
    expect(d.decode(new Msg('R').u32(700).u32(5).str('s').str('t').char('d').i16(0).build())).toMatchObject({
      tag: 'relation',
      xid: 700,
      relationId: 5,
      table: 't',
    });
    expect(d.decode(new Msg('Y').u32(701).u32(90000).str('public').str('mood').build())).toMatchObject({
      xid: 701,
      typeOid: 90000,
    });
    expect(d.decode(new Msg('I').u32(701).u32(5).char('N').tuple(['a']).build())).toEqual({
      tag: 'insert',
      xid: 701,
      relationId: 5,
      values: [{ kind: 'text', value: 'a' }],
    });
    expect(d.decode(new Msg('U').u32(701).u32(5).char('N').tuple(['b']).build())).toMatchObject({ xid: 701 });
    expect(d.decode(new Msg('D').u32(700).u32(5).char('K').tuple(['b']).build())).toMatchObject({ xid: 700 });
    expect(d.decode(new Msg('T').u32(700).i32(1).u8(0).u32(5).build())).toMatchObject({
      xid: 700,
      relationIds: [5],
    });
    expect(d.decode(new Msg('M').u32(700).u8(1).u64(1n).str('p').i32(0).build())).toMatchObject({
      xid: 700,
      prefix: 'p',
      content: Buffer.alloc(0),
    });
    expect(d.decode(new Msg('E').build())).toEqual({ tag: 'stream-stop' });
    expect(d.inStreamBlock).toBe(false);
    expect(d.decode(new Msg('I').u32(5).char('N').tuple(['c']).build())).toEqual({
      tag: 'insert',
      relationId: 5,
      values: [{ kind: 'text', value: 'c' }],
    });
    expect(d.decode(new Msg('S').u32(700).u8(0).build())).toMatchObject({ firstSegment: false });
    d.decode(new Msg('E').build());
  });

  it('decodes Stream Commit and Stream Abort', () => {
    const d = new PgoutputDecoder();
    expect(d.decode(new Msg('c').u32(700).u8(0).u64(0x5000n).u64(0x5030n).i64(TS).build())).toEqual({
      tag: 'stream-commit',
      xid: 700,
      flags: 0,
      commitLsn: '0/5000',
      endLsn: '0/5030',
      commitTime: TS_ISO,
    });
    expect(d.decode(new Msg('A').u32(700).u32(702).build())).toEqual({
      tag: 'stream-abort',
      xid: 700,
      subxid: 702,
    });
  });

  it('refuses unknown and truncated messages', () => {
    const d = new PgoutputDecoder();
    expect(() => d.decode(new Msg('Z').build())).toThrow(/unknown pgoutput message type 'Z'/);
    expect(() => d.decode(new Msg('B').u64(1n).build())).toThrow(/truncated/);
    expect(() => d.decode(new Msg('I').u32(1).char('N').i16(1).char('x').build())).toThrow(
      /tuple column kind/,
    );
    expect(() => d.decode(new Msg('I').u32(1).char('N').i16(1).char('t').i32(10).build())).toThrow(
      /truncated/,
    );
    expect(() => d.decode(new Msg('R').u32(1).str('s').build())).toThrow(PgoutputProtocolError);
  });
});
