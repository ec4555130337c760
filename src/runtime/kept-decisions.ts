import type { TableSchema } from '../core/change.js';
import type { SchemaChangeItem } from '../core/schema-diff.js';

// The same change of the same column, whatever the value rows already had.
const sameChange = (a: SchemaChangeItem, b: SchemaChangeItem) => {
  const { existing_value: _a, ...x } = a as SchemaChangeItem & { existing_value?: unknown };
  const { existing_value: _b, ...y } = b as SchemaChangeItem & { existing_value?: unknown };
  return JSON.stringify(x) === JSON.stringify(y);
};

/**
 * Splits the changes from the sink's shape to a new source shape into those already decided
 * against (rejected, or ignored by policy: the differences the sink kept with the source shape
 * it last chose not to follow) and those still open. A decision holds until the source changes
 * that column again, which makes the change differ from the one decided on.
 */
export function splitDecided(
  changes: readonly SchemaChangeItem[],
  decided: readonly SchemaChangeItem[],
): { open: SchemaChangeItem[]; kept: SchemaChangeItem[] } {
  const kept = changes.filter((c) => decided.some((d) => sameChange(c, d)));
  return { open: changes.filter((c) => !kept.includes(c)), kept };
}

/**
 * The shape the sink gets when it follows the source except for changes decided against: an
 * added column left out, a dropped column kept, a type left as it was.
 */
export function withoutKept(
  proposed: TableSchema,
  current: TableSchema,
  kept: readonly SchemaChangeItem[],
): TableSchema {
  let columns = [...proposed.columns];
  for (const change of kept) {
    if (change.kind === 'add_column') columns = columns.filter((c) => c.name !== change.column);
    if (change.kind === 'drop_column') {
      const dropped = current.columns.find((c) => c.name === change.column);
      if (dropped) columns.push({ ...dropped, nullable: true });
    }
    if (change.kind === 'alter_type') {
      const before = current.columns.find((c) => c.name === change.column);
      columns = columns.map((c) =>
        c.name === change.column && before ? { ...c, typeName: before.typeName, typeOid: before.typeOid } : c,
      );
    }
  }
  return { ...proposed, columns };
}
