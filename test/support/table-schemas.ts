import type { ColumnSchema, TableSchema } from '../../src/core/change.js';

/** A column description for tests: nullable and not a key unless told. */
export const col = (name: string, typeName: string, extra: Partial<ColumnSchema> = {}): ColumnSchema => ({
  name,
  typeName,
  typeOid: 0,
  nullable: true,
  isKey: false,
  ...extra,
});

/** A column for tests that is nullable unless it is a key. */
export const column = (name: string, typeName: string, isKey = false): ColumnSchema =>
  col(name, typeName, { isKey, nullable: !isKey });

/** A table `public.t` (unless told) for tests. */
export const tableOf = (
  columns: ColumnSchema[],
  keyColumns = ['id'],
  ref = { schema: 'public', table: 't' },
): TableSchema => ({
  ...ref,
  columns,
  keyColumns,
});
