import { createPool, type DatabasePool, type Interceptor, SchemaValidationError } from 'slonik';

export const DEFAULT_ORGANIZATION_ID = '00000000-0000-4000-8000-000000000001';
export const DEFAULT_WORKSPACE_ID = '00000000-0000-4000-8000-000000000003';
export const DEFAULT_PROJECT_ID = '00000000-0000-4000-8000-000000000002';

// Rows are checked against the zod schema given with sql.type, so a drifted schema fails loudly.
const resultParser: Interceptor = {
  name: 'result-parser',
  transformRow(context, query, row) {
    const parser = context.resultParser;
    if (!parser) return row;
    const parsed = parser.safeParse(row);
    if (!parsed.success) throw new SchemaValidationError(query, row, parsed.error.issues);
    return parsed.data;
  },
};

/** Opens the metadata store pool. Timestamps come back as ISO 8601 strings, counts as numbers. */
export function createStorePool(databaseUrl: string): Promise<DatabasePool> {
  return createPool(databaseUrl, {
    interceptors: [resultParser],
    maximumPoolSize: 10,
    connectionTimeout: 10_000,
    statementTimeout: 30_000,
    typeParsers: [
      { name: 'timestamptz', parse: (value) => new Date(value).toISOString() },
      { name: 'int8', parse: (value) => Number(value) },
    ],
  });
}

export type { DatabasePool };
