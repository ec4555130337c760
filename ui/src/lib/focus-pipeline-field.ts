import type { PropertyRow } from './pipeline-form';

/** The input each field group of the pipeline forms focuses (tables: the first table picker input). */
const FOCUS: Record<string, string> = {
  name: 'pipeline-name',
  source: 'pipeline-source',
  publication: 'pipeline-publication',
  sink: 'pipeline-sink',
  policy: 'pipeline-policy',
  parallelism: 'pipeline-parallelism',
  partitionRows: 'pipeline-partition-rows',
  properties: 'target-schema',
};

/**
 * Focuses the input of a form's first problem: `group` as `groupOf` names it, the refused sink
 * property's own key input when the service named one.
 */
export function focusPipelineField(
  group: string | undefined,
  propertyKey: string | null,
  extra: readonly PropertyRow[],
): void {
  let id = group ? FOCUS[group] : undefined;
  if (group === 'properties' && propertyKey && propertyKey !== 'target_schema') {
    const index = extra.findIndex((p) => p.key.trim() === propertyKey);
    if (index >= 0) id = `property-key-${index}`;
  }
  const target = id
    ? document.getElementById(id)
    : group === 'tables'
      ? document.querySelector<HTMLElement>(
          '[data-testid="source-tables"] input:not(:disabled), #typed-tables',
        )
      : null;
  target?.focus();
}
