import type { TableSchema } from '../../core/change.js';
import type { SourceRelation } from '../../core/change-stream.js';

/**
 * Whether the changes that follow a table shape announced inside a streamed transaction can be
 * written as they arrive: the shape is the one the sink writes the table in. Compared with the
 * last shape the stream announced outside (`seen`), or else with the shape the pipeline knows
 * (`known`, its type modifiers read back from the type names). `known` is 'cut' when the sink
 * keeps fewer columns than the source sends; undefined when the pipeline does not track the shape.
 * Anything not known for sure does not fit: the transaction is then applied after its commit, in
 * order, where the schema review sees it.
 */
export function relationFits(
  relation: SourceRelation,
  seen: SourceRelation | undefined,
  known: TableSchema | 'cut' | undefined,
): boolean {
  if (seen) {
    return (
      seen.schema === relation.schema &&
      seen.table === relation.table &&
      seen.columns.length === relation.columns.length &&
      seen.columns.every((c, i) => {
        const other = relation.columns[i];
        return (
          other !== undefined &&
          c.name === other.name &&
          c.typeOid === other.typeOid &&
          c.typeMod === other.typeMod &&
          c.isKey === other.isKey
        );
      })
    );
  }
  if (known === 'cut') return false;
  if (!known) return true;
  return (
    known.columns.length === relation.columns.length &&
    known.columns.every((c, i) => {
      const other = relation.columns[i];
      return (
        other !== undefined &&
        c.name === other.name &&
        c.typeOid === other.typeOid &&
        c.isKey === other.isKey &&
        typeModOf(c.typeName) === other.typeMod
      );
    })
  );
}

/**
 * The type modifier a `format_type` name stands for (-1 for none); undefined for a name whose
 * modifier is not read here (it then fits no relation).
 */
export function typeModOf(typeName: string): number | undefined {
  const name = typeName.endsWith('[]') ? typeName.replace(/(\[\])+$/, '') : typeName;
  if (name.startsWith('interval')) return name === 'interval' ? -1 : undefined;
  const open = name.indexOf('(');
  if (open < 0) return -1;
  const args = name
    .slice(open + 1, name.indexOf(')', open))
    .split(',')
    .map((a) => Number(a.trim()));
  if (args.some((a) => !Number.isInteger(a))) return undefined;
  const base = name.slice(0, open).trim();
  const [first = 0, second = 0] = args;
  switch (base) {
    case 'character varying':
    case 'character':
      return first + 4;
    case 'bit':
    case 'bit varying':
      return first;
    case 'numeric':
      return ((first << 16) | second) + 4;
    case 'timestamp':
    case 'time':
      return first;
    default:
      return undefined;
  }
}
