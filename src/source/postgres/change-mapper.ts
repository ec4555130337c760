import type { ChangeEvent, Row, TableRef } from '../../core/change.js';
import { PgoutputProtocolError } from './errors.js';
import type { RelationInfo, TupleValue } from './pgoutput-decoder.js';
import type { SpooledMessage } from './transaction-spool.js';

/** The committed transaction a change belongs to. */
export interface CommitInfo {
  /** Top-level xid. */
  xid: number;
  /** End LSN of the commit record. */
  commitLsn: string;
  commitTime: string;
}

/** The last Relation message seen per relation id: what tuples are decoded against. */
export class RelationCache {
  private readonly relations = new Map<number, RelationInfo>();

  /** Remembers (or replaces) a relation's description. */
  set(relation: RelationInfo): void {
    this.relations.set(relation.relationId, relation);
  }

  /** @throws PgoutputProtocolError when no Relation message preceded a change of `relationId`. */
  get(relationId: number): RelationInfo {
    const relation = this.relations.get(relationId);
    if (!relation)
      throw new PgoutputProtocolError(`change for relation ${relationId} before its Relation message`);
    return relation;
  }
}

function tableOf(relation: RelationInfo): TableRef {
  return { schema: relation.schema, table: relation.table };
}

/**
 * Maps a tuple to a row keyed by column name. Unchanged TOAST values are left out of the row and
 * listed apart; `keysOnly` keeps the replica identity columns only.
 */
function toRow(
  relation: RelationInfo,
  values: TupleValue[],
  keysOnly = false,
): { row: Row; unchanged: string[] } {
  if (values.length !== relation.columns.length) {
    throw new PgoutputProtocolError(
      `tuple of ${relation.schema}.${relation.table} has ${values.length} columns, its Relation message ${relation.columns.length}`,
    );
  }
  const row: Row = {};
  const unchanged: string[] = [];
  values.forEach((value, i) => {
    const column = relation.columns[i];
    if (!column || (keysOnly && !column.isKey)) return;
    switch (value.kind) {
      case 'null':
        row[column.name] = null;
        break;
      case 'text':
        row[column.name] = value.value;
        break;
      case 'unchanged-toast':
        unchanged.push(column.name);
        break;
      case 'binary':
        throw new PgoutputProtocolError('binary tuple data was not requested and is not supported');
    }
  });
  return { row, unchanged };
}

/**
 * Turns a spooled data message into the change event of a committed transaction. Update and
 * delete carry `key` (replica identity columns) when the old tuple was sent, and `before` when
 * it was the whole old row (REPLICA IDENTITY FULL).
 */
export function toChangeEvent(
  message: Exclude<SpooledMessage, { tag: 'relation' }>,
  lsn: string,
  relations: RelationCache,
  commit: CommitInfo,
): ChangeEvent {
  const base = { lsn, commitLsn: commit.commitLsn, xid: commit.xid, commitTime: commit.commitTime };
  if (message.tag === 'truncate') {
    const tables = message.relationIds.map((id) => tableOf(relations.get(id)));
    const [first] = tables;
    if (!first) throw new PgoutputProtocolError('truncate of no relation');
    return { op: 'truncate', table: first, tables, ...base };
  }
  const relation = relations.get(message.relationId);
  const event: ChangeEvent = { op: message.tag, table: tableOf(relation), ...base };
  if (message.tag === 'insert' || message.tag === 'update') {
    const { row, unchanged } = toRow(relation, message.values);
    event.after = row;
    if (unchanged.length > 0) event.unchangedToast = unchanged;
  }
  const old = message.tag === 'insert' ? undefined : message.old;
  if (old) {
    event.key = toRow(relation, old.values, true).row;
    if (old.kind === 'full') event.before = toRow(relation, old.values).row;
  }
  return event;
}
