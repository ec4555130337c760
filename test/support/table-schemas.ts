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
