import { describe, expect, it } from 'vitest';
import type { ChangeEvent, TableSchema } from '../../src/core/change.js';
import { planBatch, type TargetTable } from '../../src/sinks/mysql/apply-plan.js';
import { mysqlTypeOf, sourceKindOf, uncreatableReason } from '../../src/sinks/mysql/column-types.js';
import { checkMysqlSinkTables, parseMysqlSinkProperties } from '../../src/sinks/mysql/config.js';
import { quoteIdent } from '../../src/sinks/mysql/ddl.js';
import { schemaChangeSql } from '../../src/sinks/mysql/schema-change.js';
import { byteaBytes, utcDatetime, valueConverter } from '../../src/sinks/mysql/values.js';
import { RefusedChangeError } from '../../src/sinks/refused-change.js';
import { column } from '../support/table-schemas.js';

describe('mysql type mapping', () => {
  it.each([
    ['smallint', false, 'SMALLINT'],
    ['integer', false, 'INT'],
    ['bigint', true, 'BIGINT'],
    ['oid', false, 'INT UNSIGNED'],
    ['numeric(12,2)', false, 'DECIMAL(12,2)'],
    ['numeric(65,30)', false, 'DECIMAL(65,30)'],
    ['numeric(66,2)', false, 'LONGTEXT'],
    ['numeric', false, 'LONGTEXT'],
    ['numeric', true, 'VARCHAR(255)'],
    ['real', false, 'FLOAT'],
    ['double precision', false, 'DOUBLE'],
    ['boolean', false, 'TINYINT(1)'],
    ['text', false, 'LONGTEXT'],
    ['text', true, 'VARCHAR(255)'],
    ['character varying', false, 'LONGTEXT'],
    ['character varying(20)', false, 'VARCHAR(20)'],
    ['character varying(20)', true, 'VARCHAR(20)'],
    ['character varying(1000)', false, 'LONGTEXT'],
    ['character varying(1000)', true, 'VARCHAR(255)'],
    ['character(3)', false, 'VARCHAR(3)'],
    ['timestamp with time zone', false, 'DATETIME(6)'],
    ['timestamp(3) with time zone', false, 'DATETIME(3)'],
    ['timestamp(0) without time zone', false, 'DATETIME(0)'],
    ['date', false, 'DATE'],
    ['time without time zone', false, 'TIME(6)'],
    ['time(2) without time zone', false, 'TIME(2)'],
    ['time with time zone', false, 'LONGTEXT'],
    ['json', false, 'JSON'],
    ['jsonb', true, 'VARCHAR(255)'],
    ['bytea', false, 'LONGBLOB'],
    ['bytea', true, 'VARBINARY(255)'],
    ['uuid', true, 'CHAR(36)'],
    ['integer[]', false, 'LONGTEXT'],
    ['interval', false, 'LONGTEXT'],
    ['"char"', false, 'LONGTEXT'],
  ])('%s (key: %s) is %s', (typeName, isKey, expected) => {
    expect(mysqlTypeOf({ typeName, isKey })).toBe(expected);
  });
});

describe('what MySQL cannot create', () => {
  const c = (name: string, typeName = 'text') => ({ name, typeName });
  it('names columns MySQL cannot hold or tell apart, and keys too long to index', () => {
    expect(uncreatableReason('t', [c('id', 'integer'), c('Name'), c('body')], ['id'])).toBeUndefined();
    expect(uncreatableReason('t', [c('k1'), c('k2'), c('k3')], ['k1', 'k2', 'k3'])).toBeUndefined();
    expect(uncreatableReason('t', [c('Name'), c('name')], ['Name'])).toMatch(
      /"Name" and "name" are one name to MySQL/,
    );
    expect(uncreatableReason('t', [c('x😀')], ['x😀'])).toMatch(/cannot be a MySQL column name/);
    expect(uncreatableReason('t'.repeat(65), [c('id')], ['id'])).toMatch(
      /the table name "t+" cannot be a MySQL name/,
    );
    expect(uncreatableReason('t', [c('k1'), c('k2'), c('k3'), c('k4')], ['k1', 'k2', 'k3', 'k4'])).toMatch(
      /would take 4080 bytes in a MySQL index, more than 3072/,
    );
  });
});

describe('mysql value conversion', () => {
  it.each([
    ['2024-02-29 23:59:59.123456+00', '2024-02-29 23:59:59.123456'],
    ['2024-03-01 01:30:00+05:30', '2024-02-29 20:00:00'],
    ['2023-12-31 22:00:00.5-03', '2024-01-01 01:00:00.5'],
    ['1900-01-01 00:00:00-00:01:15', '1900-01-01 00:01:15'],
    ['0001-01-01 12:00:00+00', '0001-01-01 12:00:00'],
    ['0099-06-01 00:00:00+00', '0099-06-01 00:00:00'],
  ])('timestamptz %s is UTC %s', (text, utc) => {
    expect(utcDatetime(text)).toBe(utc);
  });

  it.each([
    'infinity',
    '-infinity',
    '0044-03-15 12:00:00+00 BC',
    '12345-01-01 00:00:00+00',
    '0001-01-01 00:30:00+01',
    '9999-12-31 23:00:00-02',
  ])('refuses timestamptz %s', (text) => {
    expect(() => utcDatetime(text, 'at')).toThrow(/column "at"/);
  });

  it('reads bytea hex into bytes, and refuses any other form', () => {
    expect(byteaBytes('\\x00ff5c0a')).toEqual(Buffer.from([0, 255, 0x5c, 0x0a]));
    expect(byteaBytes('\\x')).toEqual(Buffer.alloc(0));
    expect(() => byteaBytes('abc')).toThrow(/hex format/);
    expect(() => byteaBytes('\\x0')).toThrow(/hex format/);
  });

  it('converts only what the target column would misread', () => {
    expect(valueConverter('b', 'boolean', 'tinyint')('t')).toBe('1');
    expect(valueConverter('b', 'boolean', 'tinyint')('f')).toBe('0');
    expect(valueConverter('b', 'boolean', 'varchar')('t')).toBe('t');
    expect(valueConverter('b', 'boolean', 'tinyint')(null)).toBeNull();
    expect(valueConverter('x', 'bytes', 'longtext')('\\x00')).toBe('\\x00');
    expect(valueConverter('d', 'date', 'date')('2024-01-02')).toBe('2024-01-02');
    expect(() => valueConverter('d', 'date', 'date')('infinity')).toThrow(/has no MySQL DATE/);
    expect(() => valueConverter('d', 'date', 'date')('0044-03-15 BC')).toThrow(/has no MySQL DATE/);
    expect(valueConverter('d', 'date', 'longtext')('infinity')).toBe('infinity');
    expect(() => valueConverter('f', 'float', 'double')('NaN')).toThrow(/NaN cannot be stored/);
    expect(() => valueConverter('n', 'decimal', 'decimal')('-Infinity')).toThrow(
      /-Infinity cannot be stored/,
    );
    expect(valueConverter('n', 'decimal', 'longtext')('NaN')).toBe('NaN');
    // A real's shortest text may lie above FLT_MAX: the float32's exact decimal is what MySQL takes.
    expect(valueConverter('f', 'float', 'float')('3.4028235e+38')).toBe('3.4028234663852886e+38');
    expect(valueConverter('f', 'float', 'float')('-3.4028235e+38')).toBe('-3.4028234663852886e+38');
    expect(valueConverter('f', 'float', 'float')('1e-45')).toBe('1.401298464324817e-45');
    expect(valueConverter('f', 'float', 'float')('1.1754944e-38')).toBe(String(Math.fround(1.1754944e-38)));
    expect(valueConverter('f', 'float', 'float')('-0')).toBe('-0');
    expect(valueConverter('f', 'float', 'float')('0.1')).toBe(String(Math.fround(0.1)));
    expect(() => valueConverter('f', 'float', 'float')('1e+39')).toThrow(/beyond the range of a MySQL FLOAT/);
    expect(() => valueConverter('f', 'float', 'float')('Infinity')).toThrow(/Infinity cannot be stored/);
    expect(valueConverter('f', 'float', 'double')('3.4028235e+38')).toBe('3.4028235e+38');
    expect(sourceKindOf('timestamp(3) with time zone')).toBe('timestamptz');
  });
});

describe('mysql identifiers and properties', () => {
  it('quotes with backticks, doubling them, and refuses what MySQL cannot name', () => {
    expect(quoteIdent('a`b')).toBe('`a``b`');
    expect(quoteIdent('naïve "x"')).toBe('`naïve "x"`');
    for (const bad of ['', 'a ', 'x\0y', 'a😀', 'x'.repeat(65)]) expect(() => quoteIdent(bad)).toThrow();
  });

  it('parses properties and refuses unknown keys, bad names and clashing targets', () => {
    const config = parseMysqlSinkProperties({ target_database: 'dw', 'table.public.orders': 'other.o' });
    expect(config.targetDatabase).toBe('dw');
    expect(config.tableMap.get('public.orders')).toEqual({ database: 'other', table: 'o' });
    expect(() => parseMysqlSinkProperties({ target_schema: 'x' })).toThrow(/unknown property/);
    expect(() => parseMysqlSinkProperties({ target_database: 'a-b' })).toThrow(/target_database/);
    expect(() => parseMysqlSinkProperties({ batch_max_events: '0' })).toThrow(/batch_max_events/);
    const refs = [
      { schema: 'a', table: 'Orders' },
      { schema: 'b', table: 'orders' },
    ];
    expect(() => checkMysqlSinkTables(parseMysqlSinkProperties({}), refs)).toThrow(
      /a.Orders and b.orders would both be written to orders/,
    );
    expect(() =>
      checkMysqlSinkTables(parseMysqlSinkProperties({ 'table.b.orders': 'orders_b' }), refs),
    ).not.toThrow();
    expect(() => checkMysqlSinkTables(parseMysqlSinkProperties({ 'table.c.x': 'y' }), refs)).toThrow(
      /'c.x' is not one of source.tables/,
    );
    expect(() =>
      checkMysqlSinkTables(parseMysqlSinkProperties({}), [{ schema: 'a', table: '_replicator_checkpoints' }]),
    ).toThrow(/keeps its own state/);
  });
});

const items: TableSchema = {
  schema: 'public',
  table: 'items',
  columns: [column('id', 'integer', true), column('body', 'text'), column('at', 'timestamp with time zone')],
  keyColumns: ['id'],
};

const target: TargetTable = {
  source: items,
  target: { schema: 'dw', table: 'items' },
  converters: new Map([['at', valueConverter('at', 'timestamptz', 'datetime')]]),
  binary: new Set(),
};

const event = (e: Partial<ChangeEvent>): ChangeEvent =>
  ({ table: items, commitLsn: '0/1', xid: 1, commitTime: '', ...e }) as ChangeEvent;

describe('mysql batch plan', () => {
  it('gathers a table’s consecutive changes of one kind into multi-row statements, in order', () => {
    const statements = planBatch(
      [
        event({ op: 'insert', after: { id: '1', body: 'a', at: '2024-01-01 01:00:00+01' } }),
        event({ op: 'insert', after: { id: '2', body: 'b', at: null } }),
        event({ op: 'delete', key: { id: '1' } }),
        event({ op: 'delete', key: { id: '3' } }),
        // A key change of a complete image: the old key is deleted, the new one upserted.
        event({ op: 'update', key: { id: '2' }, after: { id: '4', body: 'b', at: null } }),
        // Unchanged TOAST: only the columns sent are written.
        event({ op: 'update', after: { id: '4', at: null }, unchangedToast: ['body'] }),
        event({ op: 'truncate', tables: [items] }),
      ],
      () => target,
    );
    expect(statements.map((s) => [s.sql, s.values])).toEqual([
      [
        'INSERT INTO `dw`.`items` (`id`, `body`, `at`) VALUES (?, ?, ?), (?, ?, ?) ON DUPLICATE KEY UPDATE `body` = VALUES(`body`), `at` = VALUES(`at`)',
        ['1', 'a', '2024-01-01 00:00:00', '2', 'b', null],
      ],
      ['DELETE FROM `dw`.`items` WHERE `id` IN (?, ?, ?)', ['1', '3', '2']],
      [
        'INSERT INTO `dw`.`items` (`id`, `body`, `at`) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE `body` = VALUES(`body`), `at` = VALUES(`at`)',
        ['4', 'b', null],
      ],
      [
        'INSERT INTO `dw`.`items` (`id`, `at`) VALUES (?, ?) ON DUPLICATE KEY UPDATE `at` = VALUES(`at`)',
        ['4', null],
      ],
      ['DELETE FROM `dw`.`items`', []],
    ]);
  });

  it('updates a moved row with unchanged TOAST in place, and bounds statements by rows', () => {
    const moved = planBatch(
      [event({ op: 'update', key: { id: '1' }, after: { id: '2', at: null }, unchangedToast: ['body'] })],
      () => target,
    );
    expect(moved.map((s) => [s.sql, s.values])).toEqual([
      ['UPDATE `dw`.`items` SET `id` = ?, `at` = ? WHERE `id` = ?', ['2', null, '1']],
    ]);
    const inserts = Array.from({ length: 5 }, (_, i) =>
      event({ op: 'insert', after: { id: String(i), body: 'x', at: null } }),
    );
    expect(
      planBatch(inserts, () => target, { rows: 2, bytes: 1 << 20 }).map((s) => s.values.length / 3),
    ).toEqual([2, 2, 1]);
  });

  it('refuses a value the target cannot hold, naming the table and the key', () => {
    const plan = () =>
      planBatch([event({ op: 'insert', after: { id: '7', body: null, at: 'infinity' } })], () => target);
    expect(plan).toThrow(RefusedChangeError);
    expect(plan).toThrow(/public.items with key \(id\)=\(7\): column "at"/);
  });
});

describe('mysql schema change plan', () => {
  it('adds, drops, renames, retypes and re-keys with the mapped types', () => {
    const sql = schemaChangeSql({ schema: 'dw', table: 'items' }, items, [
      { kind: 'add_column', column: 'flag', type: 'boolean', nullable: false, existing_value: 't' },
      { kind: 'add_column', column: 'note', type: 'text', nullable: true },
      { kind: 'drop_column', column: 'at' },
      { kind: 'rename_column', from: 'body', to: 'text' },
      { kind: 'alter_type', column: 'id', from: 'integer', to: 'bigint', widening: true },
      { kind: 'set_not_null', column: 'note' },
      { kind: 'change_key', from: ['id'], to: ['id', 'note'] },
    ]);
    expect(sql).toEqual([
      'ALTER TABLE `dw`.`items` ADD COLUMN `flag` TINYINT(1) NULL',
      "UPDATE `dw`.`items` SET `flag` = '1'",
      'ALTER TABLE `dw`.`items` ADD COLUMN `note` LONGTEXT NULL',
      'ALTER TABLE `dw`.`items` DROP COLUMN `at`',
      'ALTER TABLE `dw`.`items` RENAME COLUMN `body` TO `text`',
      'ALTER TABLE `dw`.`items` MODIFY COLUMN `id` BIGINT NOT NULL',
      'ALTER TABLE `dw`.`items` MODIFY COLUMN `note` LONGTEXT NOT NULL',
      'ALTER TABLE `dw`.`items` MODIFY COLUMN `note` VARCHAR(255) NOT NULL',
      'ALTER TABLE `dw`.`items` DROP PRIMARY KEY, ADD PRIMARY KEY (`id`, `note`)',
    ]);
  });
});
