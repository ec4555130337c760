import { describe, expect, it } from 'vitest';
import { PgoutputProtocolError } from '../../src/source/postgres/errors.js';
import {
  pgTimestampToIso,
  pgTimestampToUnixMs,
  Reader,
  readRelation,
} from '../../src/source/postgres/pgoutput-decoder.js';
import { Msg, pgMicros, pgoutput } from '../support/pgoutput-messages.js';

// 2024-05-06T07:08:09.123456Z in microseconds since 2000-01-01.
const TS = pgMicros(new Date('2024-05-06T07:08:09.123Z'), 456);
const TS_ISO = '2024-05-06T07:08:09.123456Z';

describe('pgoutput timestamps', () => {
  it('converts to ISO 8601 with microsecond precision', () => {
    expect(pgTimestampToIso(0n)).toBe('2000-01-01T00:00:00.000000Z');
    expect(pgTimestampToIso(TS)).toBe(TS_ISO);
    expect(pgTimestampToIso(-1n)).toBe('1999-12-31T23:59:59.999999Z');
    expect(() => pgTimestampToIso(9223372036854775807n)).toThrow(PgoutputProtocolError);
  });

  it('formats every microsecond of one second from the same second text, and a new second anew', () => {
    const second = new Date('2024-05-06T07:08:09Z');
    const expected = [0, 1, 999, 1000, 123456, 999999].map((us) => {
      const ms = Math.floor(us / 1000);
      const rest = String(us % 1000).padStart(3, '0');
      return `2024-05-06T07:08:09.${String(ms).padStart(3, '0')}${rest}Z`;
    });
    const micros = [0, 1, 999, 1000, 123456, 999999].map((us) => pgMicros(second, 0) + BigInt(us));
    expect(micros.map(pgTimestampToIso)).toEqual(expected);
    expect(pgTimestampToIso(pgMicros(second, 0) + 1_000_000n)).toBe('2024-05-06T07:08:10.000000Z');
    // Back to an earlier second after a later one: the second's text follows the value.
    expect(pgTimestampToIso(pgMicros(second, 0) - 1n)).toBe('2024-05-06T07:08:08.999999Z');
  });

  it('reads an LSN and a timestamp off a message, the timestamp as its two words', () => {
    const r = new Reader(new Msg('B').u64(0x16b374d848n).i64(TS).i64(-1n).build(), 1);
    expect(r.lsnValue()).toBe(0x16b374d848n);
    expect(r.timestamp()).toEqual({ unixMs: Date.parse('2024-05-06T07:08:09.123Z'), iso: TS_ISO });
    expect(r.timestamp()).toEqual({
      unixMs: Date.UTC(1999, 11, 31, 23, 59, 59, 999),
      iso: '1999-12-31T23:59:59.999999Z',
    });
    expect(() => r.timestamp()).toThrow(/truncated/);
  });

  it('converts to Unix milliseconds, dropping the microseconds', () => {
    expect(pgTimestampToUnixMs(0n)).toBe(Date.UTC(2000, 0, 1));
    expect(pgTimestampToUnixMs(TS)).toBe(Date.parse('2024-05-06T07:08:09.123Z'));
    expect(pgTimestampToUnixMs(-1000n)).toBe(Date.UTC(1999, 11, 31, 23, 59, 59, 999));
  });
});

describe('pgoutput reader', () => {
  it('reads big-endian integers, LSNs, timestamps, strings and text in sequence', () => {
    const buf = new Msg('X')
      .u8(255)
      .i16(-2)
      .i32(-3)
      .u32(4000000000)
      .u64(0x16b374d848n)
      .i64(TS)
      .i64(-1n)
      .str('nöm "x"')
      .str('')
      .i32(6)
      .bytes(Buffer.from('héllo'))
      .build();
    const r = new Reader(buf, 1);
    expect(r.uint8()).toBe(255);
    expect(r.int16()).toBe(-2);
    expect(r.int32()).toBe(-3);
    expect(r.uint32()).toBe(4000000000);
    expect(r.lsnValue()).toBe(0x16b374d848n);
    expect(r.micros()).toBe(TS);
    expect(r.micros()).toBe(-1n);
    expect(r.string()).toBe('nöm "x"');
    expect(r.string()).toBe('');
    expect(r.atEnd).toBe(false);
    expect(r.text(r.int32())).toBe('héllo');
    expect(r.atEnd).toBe(true);
    expect(r.offset).toBe(buf.length);
  });

  it('reads 64-bit LSNs past 2^53 exactly', () => {
    expect(new Reader(new Msg('X').u64(0xffffffffffffffffn).build(), 1).lsnValue()).toBe(0xffffffffffffffffn);
  });

  it('refuses to read past the end, an unterminated string and a negative length', () => {
    for (const read of [
      (r: Reader) => r.uint8(),
      (r: Reader) => r.int16(),
      (r: Reader) => r.int32(),
      (r: Reader) => r.uint32(),
      (r: Reader) => r.lsnValue(),
      (r: Reader) => r.micros(),
      (r: Reader) => r.text(1),
    ]) {
      expect(() => read(new Reader(Buffer.from('B'), 1))).toThrow(
        /truncated pgoutput message 'B' \(1 bytes\)/,
      );
    }
    const begin = new Reader(new Msg('B').u64(1n).build(), 1);
    expect(begin.lsnValue()).toBe(1n);
    expect(() => begin.micros()).toThrow(/truncated/);
    expect(() => new Reader(new Msg('B').u32(1).build(), 1).lsnValue()).toThrow(PgoutputProtocolError);
    expect(() => new Reader(new Msg('R').bytes(Buffer.from('abc')).build(), 1).string()).toThrow(
      /unterminated string/,
    );
    expect(() => new Reader(new Msg('I').bytes(Buffer.from('abc')).build(), 1).text(-1)).toThrow(
      /negative length/,
    );
  });
});

describe('Relation messages', () => {
  it('reads odd names, key flags, type OIDs and type modifiers', () => {
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
    const r = new Reader(buf, 1);
    expect(readRelation(r)).toEqual({
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
    expect(r.atEnd).toBe(true);
  });

  it('reads every replica identity, and relation ids up to 2^32 - 1', () => {
    for (const [flag, identity] of [
      ['d', 'default'],
      ['n', 'nothing'],
      ['f', 'full'],
      ['i', 'index'],
    ] as const) {
      const buf = new Msg('R').u32(4294967295).str('').str('t').char(flag).i16(0).build();
      expect(readRelation(new Reader(buf, 1))).toEqual({
        relationId: 4294967295,
        schema: '',
        table: 't',
        replicaIdentity: identity,
        columns: [],
      });
    }
  });

  it('reads a Relation of a stream block after its xid', () => {
    const buf = pgoutput.relation(
      { relationId: 5, schema: 's', table: 't', columns: [{ name: 'id', key: true, typeOid: 20 }] },
      700,
    );
    const r = new Reader(buf, 1);
    expect(r.uint32()).toBe(700);
    expect(readRelation(r)).toEqual({
      relationId: 5,
      schema: 's',
      table: 't',
      replicaIdentity: 'default',
      columns: [{ name: 'id', typeOid: 20, typeMod: -1, isKey: true }],
    });
  });

  it('refuses an unknown replica identity and a truncated Relation', () => {
    expect(() =>
      readRelation(new Reader(new Msg('R').u32(1).str('s').str('t').char('x').i16(0).build(), 1)),
    ).toThrow(/unknown replica identity 'x'/);
    expect(() => readRelation(new Reader(new Msg('R').u32(1).str('s').build(), 1))).toThrow(
      PgoutputProtocolError,
    );
    expect(() =>
      readRelation(
        new Reader(new Msg('R').u32(1).str('s').str('t').char('d').i16(1).u8(1).str('id').build(), 1),
      ),
    ).toThrow(/truncated/);
  });
});
