/** One identifier part: as PostgreSQL writes it unquoted, case kept, at most 63 bytes. */
const PART = '[A-Za-z_][A-Za-z0-9_$]{0,62}';

/** Pattern of a `source.tables` entry. */
export const TABLE_NAME_PATTERN = `^${PART}\\.${PART}$`;
export const TABLE_NAME_RULE =
  '"<schema>.<table>", each part starting with a letter or "_" followed by letters, digits, "_" or "$" (case kept)';

/** Pattern of `source.publication`: one identifier part. */
export const PUBLICATION_NAME_PATTERN = `^${PART}$`;

export interface TableName {
  schema: string;
  table: string;
}

const TABLE_NAME = new RegExp(TABLE_NAME_PATTERN);

/** Splits `schema.table`; undefined when it does not match TABLE_NAME_PATTERN. */
export function parseTableName(text: string): TableName | undefined {
  if (!TABLE_NAME.test(text)) return undefined;
  const [schema, table] = text.split('.') as [string, string];
  return { schema, table };
}
