import { describe, expect, it } from 'vitest';
import type { ColumnSchema } from '../../src/core/change.js';
import * as values from '../../src/core/values.js';
import {
  arrayOf,
  isArrayType,
  rowValues,
  type ScalarType,
  typedValue,
  ValueError,
  type ValueType,
  valueTypeName,
  valueTypeOf,
} from '../../src/core/values.js';

const typeOf = (typeOid: number, typeName: string) => valueTypeOf({ typeOid, typeName });

// OID, format_type() name, logical type: the built-in types and their arrays.
const BUILT_INS: [number, string, number, ScalarType][] = [
  [16, 'boolean', 1000, 'boolean'],
  [21, 'smallint', 1005, 'int16'],
  [23, 'integer', 1007, 'int32'],
  [20, 'bigint', 1016, 'int64'],
  [26, 'oid', 1028, 'int64'],
  [700, 'real', 1021, 'float32'],
  [701, 'double precision', 1022, 'float64'],
  [1700, 'numeric(12,2)', 1231, 'decimal'],
  [25, 'text', 1009, 'text'],
  [1043, 'character varying(20)', 1015, 'text'],
  [1042, 'character(3)', 1014, 'text'],
  [19, 'name', 1003, 'text'],
  [18, '"char"', 1002, 'text'],
  [2950, 'uuid', 2951, 'uuid'],
  [114, 'json', 199, 'json'],
  [3802, 'jsonb', 3807, 'json'],
  [17, 'bytea', 1001, 'bytes'],
  [1082, 'date', 1182, 'date'],
  [1083, 'time(3) without time zone', 1183, 'time'],
  [1266, 'time with time zone', 1270, 'timetz'],
  [1114, 'timestamp(6) without time zone', 1115, 'timestamp'],
  [1184, 'timestamp with time zone', 1185, 'timestamptz'],
  [1186, 'interval day to second(3)', 1187, 'interval'],
];

/** The message of what `fn` throws. */
function thrown(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('did not throw');
}

describe('valueTypeOf', () => {
  it.each(BUILT_INS)('knows OID %i (%s) and its array OID %i', (oid, name, arrayOid, type) => {
    expect(typeOf(oid, name)).toBe(type);
    expect(typeOf(arrayOid, `${name}[]`)).toBe(arrayOf(type));
    expect(typeOf(arrayOid, `${name}[]`)).toEqual({ kind: 'array', element: type });
  });

  it.each(BUILT_INS)('reads the name when the OID is unknown: %s', (_oid, name, _arrayOid, type) => {
    expect(typeOf(0, name)).toBe(type);
    expect(typeOf(0, `${name}[]`)).toBe(arrayOf(type));
  });

  it('takes the OID over the name', () => {
    expect(typeOf(23, 'whatever')).toBe('int32');
    expect(typeOf(1007, 'whatever')).toBe(arrayOf('int32'));
  });

  it('reads names with typmods, spacing and the pg_catalog schema', () => {
    expect(typeOf(99999, 'numeric')).toBe('decimal');
    expect(typeOf(99999, 'numeric(1000, -3)')).toBe('decimal');
    expect(typeOf(99999, 'character varying')).toBe('text');
    expect(typeOf(99999, 'pg_catalog.text')).toBe('text');
    expect(typeOf(99999, 'timestamp(3) with time zone')).toBe('timestamptz');
    expect(typeOf(99999, 'time(0) with time zone')).toBe('timetz');
    expect(typeOf(99999, 'interval year to month')).toBe('interval');
    expect(typeOf(99999, 'interval(2)')).toBe('interval');
    expect(typeOf(99999, 'citext')).toBe('text');
    expect(typeOf(99999, 'citext[]')).toBe(arrayOf('text'));
    expect(typeOf(99999, 'integer[][]')).toBe(arrayOf('int32'));
    expect(typeOf(99999, 'integer[3]')).toBe('other');
  });

  it('makes domains, enums, other types and their arrays "other"', () => {
    expect(typeOf(16500, 'mood')).toBe('other');
    expect(typeOf(16501, 'mood[]')).toBe(arrayOf('other'));
    expect(typeOf(16502, 'public.positive_int')).toBe('other');
    expect(typeOf(16503, 'myschema.uuid')).toBe('other');
    expect(typeOf(869, 'inet')).toBe('other');
    expect(typeOf(1041, 'inet[]')).toBe(arrayOf('other'));
    expect(typeOf(790, 'money')).toBe('other');
    expect(typeOf(600, 'point')).toBe('other');
  });

  it('keeps box arrays as text: their elements are separated by semicolons', () => {
    expect(typeOf(1020, 'box[]')).toBe('other');
    expect(typeOf(0, 'box[]')).toBe('other');
  });

  it('names types', () => {
    expect(valueTypeName('int32')).toBe('int32');
    expect(valueTypeName(arrayOf('timestamptz'))).toBe('timestamptz[]');
    expect(isArrayType(arrayOf('text'))).toBe(true);
    expect(isArrayType('text')).toBe(false);
  });
});

describe('typed scalars', () => {
  it('is exported as typedValue', () => {
    expect(values.typedValue).toBe(typedValue);
  });

  it('keeps NULL null for every type', () => {
    for (const [, , , type] of BUILT_INS) {
      expect(typedValue(type, null)).toBeNull();
      expect(typedValue(arrayOf(type), null)).toBeNull();
    }
    expect(typedValue('other', null)).toBeNull();
  });

  it('reads booleans', () => {
    expect(typedValue('boolean', 't')).toBe(true);
    expect(typedValue('boolean', 'f')).toBe(false);
    expect(typedValue('boolean', 'true')).toBe(true);
    expect(typedValue('boolean', 'false')).toBe(false);
    expect(() => typedValue('boolean', 'yes')).toThrow('invalid boolean value "yes"');
    expect(() => typedValue('boolean', '')).toThrow(ValueError);
  });

  it('reads int16 and int32 as numbers, within their ranges', () => {
    expect(typedValue('int16', '0')).toBe(0);
    expect(typedValue('int16', '-32768')).toBe(-32768);
    expect(typedValue('int16', '32767')).toBe(32767);
    expect(typedValue('int32', '-2147483648')).toBe(-2147483648);
    expect(typedValue('int32', '2147483647')).toBe(2147483647);
    expect(typedValue('int32', '+7')).toBe(7);
    expect(() => typedValue('int16', '32768')).toThrow('invalid int16 value "32768": out of range');
    expect(() => typedValue('int32', '2147483648')).toThrow('out of range');
    expect(() => typedValue('int32', 'x')).toThrow('invalid int32 value "x"');
    for (const bad of ['', ' 1', '1 ', '1.0', '1e3', '0x10', '--1', 'NaN'])
      expect(() => typedValue('int32', bad), bad).toThrow(ValueError);
  });

  it('reads int64 (and oid) as bigint, exactly', () => {
    expect(typedValue('int64', '9223372036854775807')).toBe(9223372036854775807n);
    expect(typedValue('int64', '-9223372036854775808')).toBe(-9223372036854775808n);
    expect(typedValue('int64', '9007199254740993')).toBe(9007199254740993n);
    expect(typedValue('int64', '4294967295')).toBe(4294967295n);
    expect(typedValue('int64', '0')).toBe(0n);
    expect(() => typedValue('int64', '9223372036854775808')).toThrow('out of range');
    expect(() => typedValue('int64', '1.5')).toThrow('invalid int64 value "1.5"');
    expect(() => typedValue('int64', '')).toThrow(ValueError);
  });

  it('reads floats, special values included', () => {
    expect(typedValue('float64', '3.141592653589793')).toBe(Math.PI);
    expect(typedValue('float64', '1e+308')).toBe(1e308);
    expect(typedValue('float64', '-1.5e-07')).toBe(-1.5e-7);
    expect(typedValue('float64', '4.9e-324')).toBe(5e-324);
    expect(typedValue('float64', 'NaN')).toBeNaN();
    expect(typedValue('float64', 'Infinity')).toBe(Number.POSITIVE_INFINITY);
    expect(typedValue('float64', '-Infinity')).toBe(Number.NEGATIVE_INFINITY);
    expect(Object.is(typedValue('float64', '-0'), -0)).toBe(true);
    // float4 prints the shortest decimal that reads back as the same float4
    expect(Math.fround(typedValue('float32', '0.1') as number)).toBe(Math.fround(0.1));
    expect(typedValue('float32', '3.4028235e+38')).toBe(3.4028235e38);
    expect(() => typedValue('float64', 'abc')).toThrow('invalid float64 value "abc"');
    for (const bad of ['', ' 1', '0x1', 'inf', 'infinity', '1e', '.', '1,5'])
      expect(() => typedValue('float32', bad), bad).toThrow(ValueError);
  });

  it('keeps decimals exact as strings', () => {
    expect(typedValue('decimal', '12345678901234567890.123456789012345678')).toBe(
      '12345678901234567890.123456789012345678',
    );
    expect(typedValue('decimal', '-0.00')).toBe('-0.00');
    expect(typedValue('decimal', '0.1')).toBe('0.1');
    expect(typedValue('decimal', 'NaN')).toBe('NaN');
    expect(typedValue('decimal', 'Infinity')).toBe('Infinity');
    expect(typedValue('decimal', '-Infinity')).toBe('-Infinity');
    expect(() => typedValue('decimal', '1.2.3')).toThrow('invalid decimal value "1.2.3"');
    expect(() => typedValue('decimal', '')).toThrow(ValueError);
  });

  it('keeps text and other types as they are', () => {
    for (const text of ['', ' padded  ', 'NULL', '\\N', 'é 漢字 🎉', 'tab\there\nnewline', '{1,2}'])
      expect(typedValue('text', text)).toBe(text);
    expect(typedValue('other', '192.168.0.1/24')).toBe('192.168.0.1/24');
    expect(typedValue('other', '(1,2)')).toBe('(1,2)');
  });

  it('reads uuids', () => {
    expect(typedValue('uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')).toBe(
      'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    );
    expect(() => typedValue('uuid', 'a0eebc99')).toThrow('invalid uuid value "a0eebc99"');
    expect(() => typedValue('uuid', 'g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')).toThrow(ValueError);
  });

  it('parses JSON', () => {
    expect(typedValue('json', '{"a": [1, 2.5, "x", null, true]}')).toEqual({ a: [1, 2.5, 'x', null, true] });
    expect(typedValue('json', '"text"')).toBe('text');
    expect(typedValue('json', 'null')).toBeNull();
    expect(typedValue('json', '42')).toBe(42);
    expect(typedValue('json', '[]')).toEqual([]);
    expect(typedValue('json', '{"k": "\\u00e9\\n"}')).toEqual({ k: 'é\n' });
    expect(() => typedValue('json', '{"a":')).toThrow(/^invalid json value "\{\\"a\\":": /);
  });

  it('reads bytea hex into a Buffer', () => {
    expect(typedValue('bytes', '\\x0aff')).toEqual(Buffer.from([0x0a, 0xff]));
    expect(typedValue('bytes', '\\x')).toEqual(Buffer.alloc(0));
    expect(typedValue('bytes', '\\xDEADbeef')).toEqual(Buffer.from('deadbeef', 'hex'));
    expect(typedValue('bytes', '\\x0aff')).toBeInstanceOf(Buffer);
    expect(() => typedValue('bytes', '\\x0af')).toThrow('invalid bytes value "\\\\x0af": bad hex');
    expect(() => typedValue('bytes', '\\xzz')).toThrow('bad hex');
  });

  it('reads bytea escape format too', () => {
    expect(typedValue('bytes', 'abc')).toEqual(Buffer.from('abc'));
    expect(typedValue('bytes', '\\000\\377\\\\x')).toEqual(Buffer.from([0, 255, 92, 120]));
    expect(typedValue('bytes', '')).toEqual(Buffer.alloc(0));
    expect(() => typedValue('bytes', '\\9')).toThrow('neither hex nor escape format');
    expect(() => typedValue('bytes', 'é')).toThrow(ValueError);
  });

  it('truncates long values in errors', () => {
    const message = thrown(() => typedValue('int32', '9'.repeat(200)));
    expect(message).toBe(`invalid int32 value "${'9'.repeat(50)}…": out of range`);
    const error = (() => {
      try {
        typedValue('uuid', 'nope');
      } catch (e) {
        return e as ValueError;
      }
    })();
    expect(error).toBeInstanceOf(ValueError);
    expect(error?.type).toBe('uuid');
    expect(error?.text).toBe('nope');
  });
});

describe('typed dates and times', () => {
  it('keeps ISO dates, infinities, BC and long years as they are', () => {
    expect(typedValue('date', '2024-01-02')).toBe('2024-01-02');
    expect(typedValue('date', '0001-01-01')).toBe('0001-01-01');
    expect(typedValue('date', 'infinity')).toBe('infinity');
    expect(typedValue('date', '-infinity')).toBe('-infinity');
    expect(typedValue('date', '0044-03-15 BC')).toBe('0044-03-15 BC');
    expect(typedValue('date', '4714-11-24 BC')).toBe('4714-11-24 BC');
    expect(typedValue('date', '5874897-12-31')).toBe('5874897-12-31');
    for (const bad of ['01/02/2024', '2024-1-2', '2024-01-02 00:00:00', 'Infinity', '', 'today'])
      expect(() => typedValue('date', bad), bad).toThrow(ValueError);
  });

  it('keeps times of day', () => {
    expect(typedValue('time', '03:04:05')).toBe('03:04:05');
    expect(typedValue('time', '23:59:59.999999')).toBe('23:59:59.999999');
    expect(typedValue('time', '24:00:00')).toBe('24:00:00');
    expect(() => typedValue('time', '3:04')).toThrow('invalid time value "3:04"');
    expect(() => typedValue('time', '03:04:05+00')).toThrow(ValueError);
  });

  it('writes timetz offsets the ISO way', () => {
    expect(typedValue('timetz', '03:04:05+00')).toBe('03:04:05Z');
    expect(typedValue('timetz', '03:04:05.5-08')).toBe('03:04:05.5-08:00');
    expect(typedValue('timetz', '03:04:05+05:30')).toBe('03:04:05+05:30');
    expect(typedValue('timetz', '03:04:05+05:30:00')).toBe('03:04:05+05:30');
    expect(typedValue('timetz', '00:00:00-00:01:15')).toBe('00:00:00-00:01:15');
    expect(() => typedValue('timetz', '03:04:05')).toThrow('invalid timetz value "03:04:05"');
  });

  it('puts a T in timestamps', () => {
    expect(typedValue('timestamp', '2024-01-02 03:04:05.678901')).toBe('2024-01-02T03:04:05.678901');
    expect(typedValue('timestamp', '2024-01-02 03:04:05')).toBe('2024-01-02T03:04:05');
    expect(typedValue('timestamp', '2024-01-02 03:04:05.1')).toBe('2024-01-02T03:04:05.1');
    expect(typedValue('timestamp', 'infinity')).toBe('infinity');
    expect(typedValue('timestamp', '-infinity')).toBe('-infinity');
    expect(typedValue('timestamp', '0044-03-15 12:00:00 BC')).toBe('0044-03-15 12:00:00 BC');
    expect(typedValue('timestamp', '294276-12-31 23:59:59.999999')).toBe('294276-12-31 23:59:59.999999');
    for (const bad of [
      '2024-01-02T03:04:05',
      '2024-01-02',
      '2024-01-02 03:04:05+00',
      'Tue Jan 02 03:04:05 2024',
    ])
      expect(() => typedValue('timestamp', bad), bad).toThrow(ValueError);
  });

  it('writes timestamptz in ISO 8601 with Z for UTC', () => {
    expect(typedValue('timestamptz', '2024-01-02 03:04:05.678901+00')).toBe('2024-01-02T03:04:05.678901Z');
    expect(typedValue('timestamptz', '2024-01-02 03:04:05+00')).toBe('2024-01-02T03:04:05Z');
    expect(typedValue('timestamptz', '2024-01-02 03:04:05+00:00')).toBe('2024-01-02T03:04:05Z');
    expect(typedValue('timestamptz', '2024-01-02 03:04:05.5+05:30')).toBe('2024-01-02T03:04:05.5+05:30');
    expect(typedValue('timestamptz', '2024-01-02 03:04:05-08')).toBe('2024-01-02T03:04:05-08:00');
    expect(Date.parse(typedValue('timestamptz', '2024-01-02 03:04:05.678+00') as string)).toBe(
      Date.UTC(2024, 0, 2, 3, 4, 5, 678),
    );
    expect(typedValue('timestamptz', 'infinity')).toBe('infinity');
    expect(typedValue('timestamptz', '-infinity')).toBe('-infinity');
    expect(typedValue('timestamptz', '0044-03-15 12:00:00+00 BC')).toBe('0044-03-15 12:00:00+00 BC');
    expect(typedValue('timestamptz', '1883-11-18 12:00:00-00:01:15')).toBe('1883-11-18 12:00:00-00:01:15');
    expect(typedValue('timestamptz', '294276-12-31 23:59:59.999999+00')).toBe(
      '294276-12-31 23:59:59.999999+00',
    );
    for (const bad of ['2024-01-02 03:04:05', '2024-01-02T03:04:05Z', '2024-01-02 03:04:05 UTC', ''])
      expect(() => typedValue('timestamptz', bad), bad).toThrow(ValueError);
  });

  it('keeps intervals as PostgreSQL prints them', () => {
    for (const text of [
      '00:00:00',
      '1 day',
      '-1 days',
      '1 year 2 mons 3 days 04:05:06.789',
      '-1 years -2 mons +3 days -04:05:06',
      '1 mon -1 days',
      '-178956970 years -8 mons -2147483648 days -2562047788:00:54.775808',
      '2562047788:00:54.775807',
      'infinity',
      '-infinity',
    ])
      expect(typedValue('interval', text), text).toBe(text);
    for (const bad of ['', 'P1Y2M', '1 fortnight', '@ 1 day', '1 day '])
      expect(() => typedValue('interval', bad), bad).toThrow(ValueError);
  });
});

describe('valueOf arrays', () => {
  const ints = arrayOf('int32');
  const texts = arrayOf('text');

  it('reads flat arrays with NULLs', () => {
    expect(typedValue(ints, '{1,2,NULL}')).toEqual([1, 2, null]);
    expect(typedValue(ints, '{-5}')).toEqual([-5]);
    expect(typedValue(arrayOf('int64'), '{9223372036854775807,NULL}')).toEqual([9223372036854775807n, null]);
    expect(typedValue(arrayOf('boolean'), '{t,f,NULL}')).toEqual([true, false, null]);
    expect(typedValue(arrayOf('float64'), '{1.5,NaN,-Infinity}')).toEqual([1.5, Number.NaN, -Infinity]);
    expect(typedValue(arrayOf('decimal'), '{1.10,NaN}')).toEqual(['1.10', 'NaN']);
  });

  it('reads empty arrays', () => {
    expect(typedValue(ints, '{}')).toEqual([]);
    expect(typedValue(texts, '{}')).toEqual([]);
  });

  it('tells a quoted "NULL" from an unquoted NULL', () => {
    expect(typedValue(texts, '{"a b","c\\"d",NULL,"NULL"}')).toEqual(['a b', 'c"d', null, 'NULL']);
    expect(typedValue(texts, '{null,Null,"null"}')).toEqual([null, null, 'null']);
    expect(typedValue(texts, '{NULLS,xNULL}')).toEqual(['NULLS', 'xNULL']);
  });

  it('reads quoted elements with escapes', () => {
    expect(typedValue(texts, '{"back\\\\slash","quote\\"","",",","{}"," lead","trail "}')).toEqual([
      'back\\slash',
      'quote"',
      '',
      ',',
      '{}',
      ' lead',
      'trail ',
    ]);
    expect(typedValue(texts, '{"line\nbreak","tab\there"}')).toEqual(['line\nbreak', 'tab\there']);
    expect(typedValue(texts, '{é,"漢字 🎉"}')).toEqual(['é', '漢字 🎉']);
    expect(typedValue(texts, '{a\\,b}')).toEqual(['a,b']);
  });

  it('reads nested arrays', () => {
    expect(typedValue(ints, '{{1,2},{3,4}}')).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(typedValue(ints, '{{{1},{2}},{{3},{NULL}}}')).toEqual([
      [[1], [2]],
      [[3], [null]],
    ]);
    expect(typedValue(texts, '{{"a,b",NULL},{"}","{"}}')).toEqual([
      ['a,b', null],
      ['}', '{'],
    ]);
  });

  it('reads the dimension decoration and drops the lower bounds', () => {
    expect(typedValue(ints, '[0:1]={1,2}')).toEqual([1, 2]);
    expect(typedValue(ints, '[-2:-2]={7}')).toEqual([7]);
    expect(typedValue(ints, '[0:1][5:7]={{1,2,3},{4,5,6}}')).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    expect(() => typedValue(ints, '[0:2]={1,2}')).toThrow('dimensions do not match the elements');
    expect(() => typedValue(ints, '[0:1]={{1},{2}}')).toThrow('dimensions do not match the elements');
    expect(() => typedValue(ints, '[1:0]={}')).toThrow('upper bound below lower bound');
    expect(() => typedValue(ints, '[0:1]{1,2}')).toThrow('malformed dimensions');
    expect(() => typedValue(ints, '[a:b]={1}')).toThrow('malformed dimensions');
  });

  it('tolerates the whitespace array_in allows', () => {
    expect(typedValue(ints, ' { 1 , 2 } ')).toEqual([1, 2]);
    expect(typedValue(texts, '{ a b , "c" }')).toEqual(['a b', 'c']);
    expect(typedValue(texts, '{a\\ ,b}')).toEqual(['a ', 'b']);
  });

  it('types the elements: json, bytea, timestamptz, uuid, dates, intervals', () => {
    expect(typedValue(arrayOf('json'), '{"{\\"a\\": 1}","[1, \\"x\\"]",NULL,"null",3}')).toEqual([
      { a: 1 },
      [1, 'x'],
      null,
      null,
      3,
    ]);
    expect(typedValue(arrayOf('bytes'), '{"\\\\x0aff","\\\\x",NULL}')).toEqual([
      Buffer.from([0x0a, 0xff]),
      Buffer.alloc(0),
      null,
    ]);
    expect(
      typedValue(
        arrayOf('timestamptz'),
        '{"2024-01-02 03:04:05.678901+00",infinity,"0044-03-15 12:00:00+00 BC"}',
      ),
    ).toEqual(['2024-01-02T03:04:05.678901Z', 'infinity', '0044-03-15 12:00:00+00 BC']);
    expect(typedValue(arrayOf('timestamp'), '{{"2024-01-02 03:04:05",NULL}}')).toEqual([
      ['2024-01-02T03:04:05', null],
    ]);
    expect(typedValue(arrayOf('uuid'), '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}')).toEqual([
      'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    ]);
    expect(typedValue(arrayOf('date'), '{2024-01-02,"0044-03-15 BC"}')).toEqual([
      '2024-01-02',
      '0044-03-15 BC',
    ]);
    expect(typedValue(arrayOf('interval'), '{"1 day",00:00:01}')).toEqual(['1 day', '00:00:01']);
    expect(typedValue(arrayOf('other'), '{"(1,\\"a b\\")",happy}')).toEqual(['(1,"a b")', 'happy']);
  });

  it('refuses malformed arrays, naming the type and the value', () => {
    const cases: [ValueType, string, string][] = [
      [ints, '{1,2', 'unterminated array'],
      [ints, '{1,2}}', 'unexpected text after the array'],
      [ints, '{{1,2},{3}}', 'sub-arrays of different lengths'],
      [ints, '{{1,2},3}', 'elements and sub-arrays mixed'],
      [ints, '{1,{2}}', 'elements and sub-arrays mixed'],
      [ints, '{1,,2}', 'empty unquoted element'],
      [ints, '{1,}', 'empty unquoted element'],
      [ints, '1,2', 'expected { at offset 0'],
      [ints, '', 'expected { at offset 0'],
      [ints, '{1 2}', 'invalid int32 value "1 2"'],
      [texts, '{"abc}', 'unterminated quoted element'],
      [texts, '{"a"b}', 'expected , or } at offset 4'],
      [texts, '{a"b"}', 'unexpected " in an unquoted element'],
      [texts, '{a\\', 'unterminated array'],
    ];
    for (const [type, text, reason] of cases) {
      const message = thrown(() => typedValue(type, text));
      expect(message, text).toContain(`invalid ${valueTypeName(type)} value ${JSON.stringify(text)}: `);
      expect(message, text).toContain(reason);
    }
  });

  it('names the element that does not read', () => {
    expect(thrown(() => typedValue(ints, '{1,x,3}'))).toBe(
      'invalid int32[] value "{1,x,3}": invalid int32 value "x"',
    );
    expect(thrown(() => typedValue(arrayOf('bytes'), '{"\\\\xzz"}'))).toContain('bad hex');
    const long = `{${Array.from({ length: 40 }, (_, i) => i).join(',')},x}`;
    expect(thrown(() => typedValue(ints, long))).toBe(
      `invalid int32[] value "${long.slice(0, 50)}…": invalid int32 value "x"`,
    );
  });
});

describe('rowValues', () => {
  const column = (name: string, typeOid: number, typeName: string): ColumnSchema => ({
    name,
    typeOid,
    typeName,
    nullable: true,
    isKey: false,
  });
  const columns = [
    column('id', 20, 'bigint'),
    column('name', 25, 'text'),
    column('tags', 1009, 'text[]'),
    column('doc', 3802, 'jsonb'),
    column('at', 1184, 'timestamp with time zone'),
    column('mood', 16500, 'mood'),
  ];

  it('converts each column by its type', () => {
    expect(
      rowValues(columns, {
        id: '42',
        name: 'x',
        tags: '{a,NULL}',
        doc: '{"k": 1}',
        at: '2024-01-02 03:04:05+00',
        mood: 'happy',
      }),
    ).toEqual({
      id: 42n,
      name: 'x',
      tags: ['a', null],
      doc: { k: 1 },
      at: '2024-01-02T03:04:05Z',
      mood: 'happy',
    });
  });

  it('keeps absent columns absent and nulls null', () => {
    const values = rowValues(columns, { id: '1', name: null });
    expect(values).toEqual({ id: 1n, name: null });
    expect(Object.keys(values)).toEqual(['id', 'name']);
  });

  it('ignores row keys with no column', () => {
    expect(rowValues([column('id', 23, 'integer')], { id: '1', stray: 'x' })).toEqual({ id: 1 });
  });

  it('copes with column names that are Object.prototype members', () => {
    const odd = [column('constructor', 23, 'integer'), column('__proto__', 25, 'text')];
    expect(rowValues(odd, {})).toEqual({});
    const row = JSON.parse('{"constructor": "7", "__proto__": "p"}');
    const values = rowValues(odd, row);
    expect(Object.keys(values)).toEqual(['constructor', '__proto__']);
    expect(values.constructor).toBe(7);
    expect(Object.getOwnPropertyDescriptor(values, '__proto__')?.value).toBe('p');
  });

  it('throws on a malformed value', () => {
    expect(() => rowValues(columns, { id: 'x' })).toThrow('invalid int64 value "x"');
  });
});
