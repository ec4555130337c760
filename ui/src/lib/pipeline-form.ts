/**
 * The parts of a pipeline's definition the create and edit forms share: which input an API
 * refusal belongs to, and the sink properties and snapshot options as the inputs hold them.
 */

export type PropertyRow = { key: string; value: string };

/** The input group an API field path names (a 400 or 422 names it first). */
export function groupOf(field: string): string {
  if (field === 'name') return 'name';
  if (field.startsWith('source.tables')) return 'tables';
  if (field === 'source.publication') return 'publication';
  if (field.startsWith('source')) return 'source';
  if (field.startsWith('sink.properties')) return 'properties';
  if (field.startsWith('sink')) return 'sink';
  if (field === 'snapshot.parallelism') return 'parallelism';
  if (field === 'snapshot.partition_rows') return 'partitionRows';
  if (field.startsWith('schema_policy')) return 'policy';
  return 'other';
}

/** The sink property a refusal names: `sink.properties.table.public.orders` → `table.public.orders`. */
export function propertyKeyOf(field: string | null): string | null {
  if (!field) return null;
  return field.startsWith('sink.properties.') ? field.slice('sink.properties.'.length) : '';
}

/** A definition's sink properties as the editor's inputs: target_schema apart, the others as rows. */
export function splitProperties(properties: Record<string, string>): {
  targetSchema: string;
  extra: PropertyRow[];
} {
  const { target_schema: targetSchema = '', ...others } = properties;
  return { targetSchema, extra: Object.entries(others).map(([key, value]) => ({ key, value })) };
}

/** The editor's inputs as sink properties: blank keys left out, keys trimmed. */
export function joinProperties(targetSchema: string, extra: readonly PropertyRow[]): Record<string, string> {
  const properties: Record<string, string> = {};
  if (targetSchema.trim()) properties.target_schema = targetSchema.trim();
  for (const { key, value } of extra) if (key.trim()) properties[key.trim()] = value;
  return properties;
}

/** Snapshot options from number inputs (null or NaN when empty): only the ones given. */
export function snapshotOptions(
  parallelism: number | null,
  partitionRows: number | null,
): { parallelism?: number; partition_rows?: number } {
  const snapshot: { parallelism?: number; partition_rows?: number } = {};
  if (typeof parallelism === 'number' && !Number.isNaN(parallelism)) snapshot.parallelism = parallelism;
  if (typeof partitionRows === 'number' && !Number.isNaN(partitionRows))
    snapshot.partition_rows = partitionRows;
  return snapshot;
}
