/** Words for the changes of a schema proposal, and the column-by-column view of its diff. */
import type { SchemaChangeItem } from '../../../src/core/schema-diff';
import type { ProposalColumn, SchemaProposal } from './api-types';

const quote = (name: string) => `"${name}"`;

export function describeChange(change: SchemaProposal['changes'][number]): string {
  const item = change as SchemaChangeItem;
  switch (item.kind) {
    case 'add_column': {
      const existing =
        item.existing_value === undefined
          ? '; existing rows are copied again (their value is not known)'
          : item.existing_value === null
            ? ''
            : `; existing rows get ${item.existing_value}`;
      return `Add column ${quote(item.column)} ${item.type}${item.nullable ? '' : ' (NOT NULL at the source)'}${existing}`;
    }
    case 'drop_column':
      return `Drop column ${quote(item.column)}`;
    case 'rename_column':
      return `Rename column ${quote(item.from)} to ${quote(item.to)}`;
    case 'alter_type':
      return `Change the type of ${quote(item.column)} from ${item.from} to ${item.to}${item.widening ? ' (widening)' : ''}`;
    case 'set_not_null':
      return `Set NOT NULL on ${quote(item.column)} (not mirrored in the sink)`;
    case 'drop_not_null':
      return `Drop NOT NULL on ${quote(item.column)}`;
    case 'change_key':
      return `Change the key from (${item.from.join(', ')}) to (${item.to.join(', ')})`;
    default:
      return JSON.stringify(change);
  }
}

export type ColumnDiffKind = 'same' | 'added' | 'dropped' | 'renamed' | 'changed';

export interface ColumnDiff {
  name: string;
  kind: ColumnDiffKind;
  current: ProposalColumn | null;
  proposed: ProposalColumn | null;
  /** For a rename, the old name. */
  renamedFrom?: string;
}

/** The columns side by side: the sink's (current) and the source's (proposed). */
export function columnDiff(proposal: SchemaProposal): ColumnDiff[] {
  const renames = new Map<string, string>();
  for (const change of proposal.changes as SchemaChangeItem[]) {
    if (change.kind === 'rename_column') renames.set(change.to, change.from);
  }
  const current = new Map(proposal.current_columns.map((c) => [c.name, c]));
  const seen = new Set<string>();
  const rows: ColumnDiff[] = proposal.proposed_columns.map((column) => {
    const from = renames.get(column.name);
    const before = current.get(from ?? column.name) ?? null;
    if (before) seen.add(before.name);
    if (!before) return { name: column.name, kind: 'added', current: null, proposed: column };
    if (from)
      return { name: column.name, kind: 'renamed', current: before, proposed: column, renamedFrom: from };
    const same =
      before.type === column.type && before.nullable === column.nullable && before.key === column.key;
    return { name: column.name, kind: same ? 'same' : 'changed', current: before, proposed: column };
  });
  for (const column of proposal.current_columns) {
    if (!seen.has(column.name))
      rows.push({ name: column.name, kind: 'dropped', current: column, proposed: null });
  }
  return rows;
}

export function columnText(column: ProposalColumn | null): string {
  if (!column) return '—';
  return `${column.type}${column.nullable ? '' : ' not null'}${column.key ? ' (key)' : ''}`;
}
