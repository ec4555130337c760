import type { TableRef } from '../../core/change.js';
import { RelationCache } from './change-mapper.js';
import type { RelationInfo } from './pgoutput-decoder.js';

/**
 * The relations a streamed transaction's changes are decoded with while it arrives: those its own
 * stream announced, over the ones the committed stream knows. Kept apart, so that a shape of a
 * transaction still open never decodes the changes of another.
 */
export class StreamedRelations extends RelationCache {
  private readonly own = new Map<number, { info: RelationInfo; table: TableRef }>();

  constructor(private readonly committed: RelationCache) {
    super();
  }

  override set(relation: RelationInfo): void {
    this.own.set(relation.relationId, {
      info: relation,
      table: { schema: relation.schema, table: relation.table },
    });
  }

  override get(relationId: number): { info: RelationInfo; table: TableRef } {
    return this.own.get(relationId) ?? this.committed.get(relationId);
  }
}
