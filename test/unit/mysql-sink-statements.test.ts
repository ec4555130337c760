import { describe, expect, it } from 'vitest';
import type { TableSchema } from '../../src/core/change.js';
import type { TargetTable } from '../../src/sinks/mysql/apply-plan.js';
import { bookkeepingSql } from '../../src/sinks/mysql/bookkeeping-sql.js';
import { deleteAllSql, upsertSql } from '../../src/sinks/mysql/ddl.js';
import { generatedColumnsOf, mysqlGeneratedExpression } from '../../src/sinks/mysql/generated-columns.js';
import {
  loadDataField,
  loadDataLines,
  loadDataSql,
  refusedFile,
  refusedRowNumber,
} from '../../src/sinks/mysql/load-data.js';
import { upsertStyleOf } from '../../src/sinks/mysql/server-dialect.js';
import { valueConverter } from '../../src/sinks/mysql/values.js';
import { RefusedChangeError } from '../../src/sinks/refused-change.js';
import { column } from '../support/table-schemas.js';

describe('mysql server dialect', () => {
  it('uses the row alias on MySQL 8.0.19 and later only, VALUES() on MariaDB and older MySQL', () => {
    expect(upsertStyleOf('8.0.19')).toBe('row-alias');
    expect(upsertStyleOf('8.0.36-0ubuntu0.22.04.1')).toBe('row-alias');
    expect(upsertStyleOf('8.4.2')).toBe('row-alias');
    expect(upsertStyleOf('9.0.1-commercial')).toBe('row-alias');
    expect(upsertStyleOf('8.0.18')).toBe('values');
    expect(upsertStyleOf('5.7.44-log')).toBe('values');
    // MariaDB 11 has a version above 8.0.19 and no row alias.
    expect(upsertStyleOf('10.11.6-MariaDB-0+deb12u1')).toBe('values');
    expect(upsertStyleOf('11.4.2-MariaDB')).toBe('values');
    expect(upsertStyleOf('5.5.5-10.11.6-MariaDB')).toBe('values');
    expect(upsertStyleOf('unknown')).toBe('values');
  });

  it('writes upserts with the row alias or VALUES()', () => {
    const target = { schema: 'dw', table: 'items' };
    const columns = [{ name: 'id' }, { name: 'body' }];
    expect(upsertSql(target, columns, ['id'], 2, 'row-alias')).toBe(
      'INSERT INTO `dw`.`items` (`id`, `body`) VALUES (?, ?), (?, ?) AS _replicator_new ON DUPLICATE KEY UPDATE `body` = _replicator_new.`body`',
    );
    expect(upsertSql(target, columns, ['id'], 1, 'values')).toBe(
      'INSERT INTO `dw`.`items` (`id`, `body`) VALUES (?, ?) ON DUPLICATE KEY UPDATE `body` = VALUES(`body`)',
    );
    expect(upsertSql(target, [{ name: 'id' }], ['id'], 1, 'row-alias')).toBe(
      'INSERT INTO `dw`.`items` (`id`) VALUES (?) ON DUPLICATE KEY UPDATE `id` = `id`',
    );
    const mysql8 = bookkeepingSql('db', 'row-alias');
    expect(mysql8.storeCheckpoint).toMatch(
      / AS _replicator_new ON DUPLICATE KEY UPDATE lsn = _replicator_new\.lsn, epoch = _replicator_new\.epoch/,
    );
    expect(mysql8.storeCheckpoint).not.toContain('VALUES(');
    expect(mysql8.markPartition).not.toContain('VALUES(');
    expect(bookkeepingSql('db', 'values').storeCheckpoint).toContain('lsn = VALUES(lsn)');
  });

  it('empties a table by DELETE, never TRUNCATE (which needs DROP)', () => {
    expect(deleteAllSql({ schema: 'a', table: 'b' })).toBe('DELETE FROM `a`.`b`');
  });
});

describe('mysql generated columns', () => {
  const columns = [
    column('id', 'bigint', true),
    column('price', 'numeric(12,2)'),
    column('qty', 'integer'),
    column('first', 'text'),
    column('Last Name', 'character varying(40)'),
    column('ratio', 'real'),
    column('at', 'timestamp with time zone'),
  ];
  const expr = (expression: string, typeName = 'numeric(14,2)') =>
    mysqlGeneratedExpression({ name: 'g', typeName, expression }, columns);

  it('carries over arithmetic, concatenation and a few functions, as pg_get_expr prints them', () => {
    // PostgreSQL casts an integer to numeric beside a numeric; MySQL's DECIMAL arithmetic does alike.
    expect(expr('(price * (qty)::numeric)')).toEqual({ sql: '(`price` * `qty`)' });
    expect(expr('(price * (ratio)::numeric)')).toMatchObject({ reason: expect.stringContaining('ratio') });
    expect(expr('((price * 2))::numeric(10,2)')).toEqual({
      reason: 'its expression has a cast of an expression',
    });
    expect(expr('((price * 2) + qty)')).toEqual({ sql: '((`price` * 2) + `qty`)' });
    expect(expr("(price + '-1'::integer)")).toEqual({ sql: '(`price` + (-1))' });
    expect(expr('(- price)')).toEqual({ sql: '(- `price`)' });
    expect(expr(`((first || ' '::text) || "Last Name")`, 'text')).toEqual({
      sql: "CONCAT(CONCAT(`first`, ' '), `Last Name`)",
    });
    expect(expr(`lower(COALESCE(first, 'it''s \\'::text))`, 'text')).toEqual({
      sql: "LOWER(COALESCE(`first`, 'it''s \\\\'))",
    });
    expect(expr('length(first)', 'integer')).toEqual({ sql: 'CHAR_LENGTH(`first`)' });
  });

  it('leaves out what MySQL would compute differently, saying why', () => {
    expect(expr('(price / 2)')).toMatchObject({ reason: expect.stringContaining('"/"') });
    expect(expr('(ratio * 2)', 'double precision')).toMatchObject({
      reason: expect.stringContaining('ratio'),
    });
    expect(expr("(at + '1 day'::interval)", 'timestamp with time zone')).toMatchObject({
      reason: expect.stringContaining('timestamp with time zone'),
    });
    expect(expr('(first || qty)', 'text')).toMatchObject({ reason: expect.stringContaining('|| of number') });
    expect(expr('(qty + 1)', 'text')).toMatchObject({ reason: expect.stringContaining('gives number') });
    expect(expr('md5(first)', 'text')).toMatchObject({ reason: expect.stringContaining('function md5') });
    expect(expr('(nosuch + 1)')).toMatchObject({ reason: expect.stringContaining('the name nosuch') });
  });

  it('makes column definitions for the generated columns it can carry over', () => {
    const source: TableSchema = {
      schema: 's',
      table: 't',
      columns,
      keyColumns: ['id'],
      generated: [
        { name: 'total', typeName: 'numeric(14,2)', expression: '(price * 2)' },
        { name: 'half', typeName: 'numeric(14,2)', expression: '(price / 2)' },
      ],
    };
    const { definitions, leftOut } = generatedColumnsOf(source);
    expect(definitions).toEqual(['`total` DECIMAL(14,2) GENERATED ALWAYS AS ((`price` * 2)) STORED']);
    expect(leftOut.map((l) => l.column)).toEqual(['half']);
  });
});

describe('mysql LOAD DATA', () => {
  const items: TableSchema = {
    schema: 'src',
    table: 'items',
    columns: [
      column('id', 'integer', true),
      column('body', 'text'),
      column('at', 'timestamp with time zone'),
    ],
    keyColumns: ['id'],
  };

  it('names only its own stream and spells out every format option', () => {
    expect(loadDataSql({ schema: 'd', table: 't' }, [{ name: 'id' }, { name: 'b' }], new Set(['b']))).toBe(
      "LOAD DATA LOCAL INFILE 'replicator-rows' REPLACE INTO TABLE `d`.`t` CHARACTER SET utf8mb4 " +
        "FIELDS TERMINATED BY '\\t' ENCLOSED BY '' ESCAPED BY '\\\\' LINES STARTING BY '' TERMINATED BY '\\n' " +
        '(`id`, @v1) SET `b` = UNHEX(@v1)',
    );
  });

  it('escapes what LOAD DATA would read otherwise, and converts values as a batch does', () => {
    expect(loadDataField(null)).toBe('\\N');
    expect(loadDataField('a\tb\nc\\d\re\0f \\N')).toBe('a\\tb\\nc\\\\d\\re\\0f \\\\N');
    expect(loadDataField(Buffer.from([0, 0x5c, 0xff]))).toBe('005cff');
    const table: TargetTable = {
      source: items,
      target: { schema: 'dw', table: 'items' },
      converters: new Map([['at', valueConverter('at', 'timestamptz', 'datetime')]]),
      binary: new Set(),
    };
    const line = loadDataLines(table);
    expect(line({ id: '1', body: 'x\ty', at: '2024-01-01 01:00:00.5+01' })).toBe(
      '1\tx\\ty\t2024-01-01 00:00:00.5\n',
    );
    expect(line({ id: '2', body: null, at: '2024-01-01 01:00:00+00' })).toBe('2\t\\N\t2024-01-01 01:00:00\n');
    expect(() => line({ id: '3', body: null, at: 'infinity' })).toThrow(RefusedChangeError);
    expect(() => line({ id: '3', body: null, at: 'infinity' })).toThrow(/with key \(id\)=\(3\)/);
  });

  it('reads the row a server error names, and refuses a file it did not ask for', async () => {
    expect(refusedRowNumber(new Error("Data too long for column 'v' at row 12"))).toBe(12);
    expect(refusedRowNumber(new Error('Lost connection'))).toBeUndefined();
    const chunks: unknown[] = [];
    await expect(
      (async () => {
        for await (const chunk of refusedFile('/etc/passwd')) chunks.push(chunk);
      })(),
    ).rejects.toThrow(/asked for the file "\/etc\/passwd"/);
    expect(chunks).toEqual([]);
  });
});
