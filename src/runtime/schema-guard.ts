import type { DatabasePool } from 'slonik';
import { type ChangeEvent, type ColumnValue, type Row, type TableSchema, tableKey } from '../core/change.js';
import type { SourceRelation } from '../core/change-stream.js';
import { diffSchemas, isCompatible, type SchemaChangeItem } from '../core/schema-diff.js';
import type { Sink } from '../core/sink.js';
import type { Source } from '../core/source.js';
import type { Logger } from '../log/logger.js';
import { type SchemaProposal, schemaStore } from '../store/schema-store.js';
import { splitDecided, withoutKept } from './kept-decisions.js';

export type SchemaPolicy = 'review' | 'auto' | 'ignore';

// Nullability is left out: a sink column may be more lenient than its source (see sinkShapeOf).
const shapeOf = (t: TableSchema) =>
  JSON.stringify([t.columns.map((c) => [c.name, c.typeName]), t.keyColumns]);

/** The shape the sink gets: a column added there is nullable, as rows already copied have no value. */
export function sinkShapeOf(current: TableSchema, proposed: TableSchema): TableSchema {
  const existing = new Set(current.columns.map((c) => c.name));
  return {
    ...proposed,
    columns: proposed.columns.map((c) => (existing.has(c.name) || c.isKey ? c : { ...c, nullable: true })),
  };
}

function keep(row: Row | undefined, columns: ReadonlySet<string>): Row | undefined {
  if (!row) return row;
  return Object.fromEntries(Object.entries(row).filter(([name]) => columns.has(name)));
}

export interface SchemaGuardDeps {
  pool: DatabasePool;
  pipelineId: string;
  projectId: string;
  policy: SchemaPolicy;
  sink: Sink;
  /** The source, connected: it describes a new shape. */
  source: Source;
  /** Per `schema.table`: the shape the sink has, and a source shape it chose not to follow. */
  known: Map<string, TableSchema>;
  sourceOnly: Map<string, TableSchema>;
  logger: Logger;
  /** Copies a table again while the others stream: for rows whose new column values are unknown. */
  requestBackfill(table: TableSchema): Promise<void>;
}

/** Whether rows already in the sink cannot be given the values the source's rows have for new columns. */
export const needsBackfill = (changes: readonly SchemaChangeItem[]) =>
  changes.some((c) => c.kind === 'add_column' && c.existing_value === undefined);

/**
 * Watches the shapes the stream announces (relation items, sent before the first change of a new
 * shape) against the shapes the sink has. Under `review`, and under `auto` for a change that is
 * not compatible, it stops the apply before the first change of the new shape and stores a
 * proposal; `auto` applies compatible changes; `ignore` (and a rejected proposal) keeps the
 * sink's shape, writing only the columns it has.
 */
export class SchemaGuard {
  constructor(private readonly deps: SchemaGuardDeps) {}

  /**
   * Decides on a table shape announced by the stream. `flushCommitted` makes everything before
   * the current transaction durable; it is called before any change to the sink.
   */
  async onRelation(
    relation: SourceRelation,
    flushCommitted: () => Promise<void>,
  ): Promise<'continue' | 'hold'> {
    const { known, sourceOnly, policy, sink, logger } = this.deps;
    const key = tableKey(relation);
    const current = known.get(key);
    if (!current) return 'continue';
    const proposed = await this.deps.source.describeRelation(relation);
    if (proposed === null) {
      // Dropped at the source since: its last changes are applied in the shape the sink has, cut
      // to the sink's columns, as nothing more can be read of the source's shape.
      sourceOnly.set(key, current);
      logger.info({ table: key }, 'the table is gone from the source; its last changes keep the sink shape');
      return 'continue';
    }
    if (shapeOf(proposed) === shapeOf(current)) {
      sourceOnly.delete(key);
      // A source column that now allows NULL must allow it in the sink too, whatever the policy.
      const relax = diffSchemas(current, proposed).filter((c) => c.kind === 'drop_not_null');
      if (relax.length > 0) {
        await flushCommitted();
        await this.apply(key, current, sinkShapeOf(current, proposed), relax, 'relaxed NOT NULL');
      }
      return 'continue';
    }
    const ignored = sourceOnly.get(key);
    if (ignored && shapeOf(ignored) === shapeOf(proposed)) return 'continue';
    // A NOT NULL added at the source is not mirrored: a more lenient sink column accepts every row.
    const structural = diffSchemas(current, proposed).filter((c) => c.kind !== 'set_not_null');
    // Changes rejected (or ignored) before stay decided while the source leaves those columns alone.
    const decided = ignored ? diffSchemas(current, ignored) : [];
    const { open, kept } = splitDecided(structural, decided);
    if (open.length === 0 && kept.length > 0) {
      sourceOnly.set(key, proposed);
      await schemaStore.setSourceOnly(this.deps.pool, this.deps.pipelineId, key, proposed);
      logger.info({ table: key, kept }, 'schema change already decided on; the sink keeps its columns');
      return 'continue';
    }
    const changes = await this.withExistingValues(relation, open);
    const proposal: SchemaProposal = {
      current,
      proposed: kept.length > 0 ? withoutKept(proposed, current, kept) : proposed,
      ...(kept.length > 0 ? { source: proposed } : {}),
      changes,
      ddl: sink.planSchemaChange(current, changes),
    };
    if (policy === 'ignore') {
      sourceOnly.set(key, proposed);
      await schemaStore.setSourceOnly(this.deps.pool, this.deps.pipelineId, key, proposed);
      logger.info({ table: key, changes }, 'schema change ignored; the sink keeps its columns');
      return 'continue';
    }
    await flushCommitted();
    if (policy === 'auto' && changes.every(isCompatible)) {
      await this.apply(
        key,
        current,
        sinkShapeOf(current, proposal.proposed),
        changes,
        'schema change applied',
      );
      if (proposal.source) {
        sourceOnly.set(key, proposal.source);
        await schemaStore.setSourceOnly(this.deps.pool, this.deps.pipelineId, key, proposal.source);
      }
      return 'continue';
    }
    await schemaStore.propose(this.deps.pool, this.deps.pipelineId, this.deps.projectId, key, proposal);
    logger.info({ table: key, changes }, 'schema change waits for review');
    return 'hold';
  }

  private async apply(
    key: string,
    current: TableSchema,
    shape: TableSchema,
    changes: SchemaChangeItem[],
    what: string,
  ): Promise<void> {
    const { sink, pool, pipelineId, projectId } = this.deps;
    const ddl = sink.planSchemaChange(current, changes);
    await sink.applySchemaChange(shape, ddl);
    this.deps.known.set(key, shape);
    await schemaStore.setKnown(pool, pipelineId, key, shape);
    await schemaStore.recordApplied(pool, pipelineId, projectId, key, {
      current,
      proposed: shape,
      changes,
      ddl,
    });
    this.deps.logger.info({ table: key, changes }, what);
    if (needsBackfill(changes)) await this.deps.requestBackfill(shape);
  }

  /**
   * Adds to each added column the value the source's existing rows have for it, which no row
   * change carries to the stream (a constant default of ADD COLUMN). A column whose rows each got
   * their own value (a volatile default) is left unknown.
   */
  private async withExistingValues(
    relation: SourceRelation,
    changes: SchemaChangeItem[],
  ): Promise<SchemaChangeItem[]> {
    const added = changes.flatMap((c) => (c.kind === 'add_column' ? [c.column] : []));
    if (added.length === 0) return changes;
    const values = await this.deps.source.existingValues(relation, added);
    return changes.map((change) =>
      change.kind === 'add_column' && values.has(change.column)
        ? { ...change, existing_value: values.get(change.column) as ColumnValue }
        : change,
    );
  }

  /** The shape the sink writes table `key` in: 'cut' when it keeps fewer columns than the source sends. */
  shapeFor(key: string): TableSchema | 'cut' | undefined {
    return this.deps.sourceOnly.has(key) ? 'cut' : this.deps.known.get(key);
  }

  /** A change cut down to the columns the sink has, for a table whose new shape it does not follow. */
  project(change: ChangeEvent): ChangeEvent {
    const key = tableKey(change.table);
    if (!this.deps.sourceOnly.has(key)) return change;
    const columns = new Set(this.deps.known.get(key)?.columns.map((c) => c.name));
    return {
      ...change,
      after: keep(change.after, columns),
      before: keep(change.before, columns),
      key: keep(change.key, columns),
      unchangedToast: change.unchangedToast?.filter((c) => columns.has(c)),
    };
  }
}
