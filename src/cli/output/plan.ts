import type { ApplyPlan } from '../../client/api-client.js';

const SIGN = { created: '+', updated: '~', deleted: '-', unchanged: '=' } as const;
const VERB = {
  true: { created: 'to create', updated: 'to update', deleted: 'to delete', unchanged: 'unchanged' },
  false: { created: 'created', updated: 'updated', deleted: 'deleted', unchanged: 'unchanged' },
} as const;

/**
 * The plan of an apply, one line per resource that changes (`+` create, `~` update with the
 * fields that differ, `-` delete), then a count of each.
 */
export function formatPlan(plan: ApplyPlan): string {
  const entries = [
    ...plan.connections.map((e) => ({ kind: 'connection', ...e })),
    ...plan.pipelines.map((e) => ({ kind: 'pipeline', ...e })),
  ];
  const lines = entries
    .filter((e) => e.result !== 'unchanged')
    .flatMap((e) => [
      `${SIGN[e.result]} ${e.kind} ${e.name}${e.result === 'updated' && e.changes?.length ? ` (${e.changes.join(', ')})` : ''}`,
      // What the plan cannot show by comparing, e.g. a secret supplied that will replace the stored one.
      ...(e.notes ?? []).map((note) => `    ${note}`),
    ]);
  const verbs = VERB[String(plan.dry_run) as 'true' | 'false'];
  const counts = (['created', 'updated', 'deleted', 'unchanged'] as const)
    .map((result) => ({ result, n: entries.filter((e) => e.result === result).length }))
    .filter(({ n }) => n > 0)
    .map(({ result, n }) => `${n} ${verbs[result]}`);
  const summary = plan.dry_run
    ? `Dry run, nothing changed: ${counts.join(', ') || 'an empty document'}.`
    : `Applied: ${counts.join(', ') || 'an empty document'}.`;
  return `${[...lines, summary].join('\n')}\n`;
}
