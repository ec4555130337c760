import type { ChangeEvent, Row, TableRef } from '../../core/change.js';
import { PgoutputProtocolError } from './errors.js';
import type { Reader, RelationInfo } from './pgoutput-decoder.js';

/** The committed transaction a change belongs to, shared by all its changes. */
export interface TransactionInfo {
  /** Top-level xid. */
  xid: number;
  /** LSN of the commit record. */
  commitLsn: bigint;
  commitTime: string;
}

/** The last Relation message seen per relation id: what tuples are decoded against. */
export class RelationCache {
  private readonly relations = new Map<number, { info: RelationInfo; table: TableRef }>();

  /** Remembers (or replaces) a relation's description. */
  set(relation: RelationInfo): void {
    this.relations.set(relation.relationId, {
      info: relation,
      table: { schema: relation.schema, table: relation.table },
    });
  }

  /** @throws PgoutputProtocolError when no Relation message preceded a change of `relationId`. */
  get(relationId: number): { info: RelationInfo; table: TableRef } {
    const relation = this.relations.get(relationId);
    if (!relation)
      throw new PgoutputProtocolError(`change for relation ${relationId} before its Relation message`);
    return relation;
  }
}

const NULL = 0x6e; // n
const UNCHANGED_TOAST = 0x75; // u
const TEXT = 0x74; // t
const BINARY = 0x62; // b
const NEW = 0x4e; // N
const KEY = 0x4b; // K
const OLD = 0x4f; // O

/**
 * Reads a tuple straight into a row keyed by column name (no intermediate value objects: this
 * runs for every change). Unchanged TOAST values are left out and listed apart; `keysOnly` keeps
 * the replica identity columns only.
 */
export function readRow(
  r: Reader,
  relation: RelationInfo,
  keysOnly: boolean,
): { row: Row; unchanged?: string[] } {
  const count = r.int16();
  const columns = relation.columns;
  if (count !== columns.length) {
    throw new PgoutputProtocolError(
      `tuple of ${relation.schema}.${relation.table} has ${count} columns, its Relation message ${columns.length}`,
    );
  }
  const row: Row = {};
  let unchanged: string[] | undefined;
  for (let i = 0; i < count; i++) {
    const column = columns[i] as RelationInfo['columns'][number];
    const kind = r.uint8();
    if (kind === TEXT) {
      const value = r.text(r.int32());
      if (!keysOnly || column.isKey) row[column.name] = value;
    } else if (kind === NULL) {
      if (!keysOnly || column.isKey) row[column.name] = null;
    } else if (kind === UNCHANGED_TOAST) {
      if (keysOnly) continue;
      unchanged ??= [];
      unchanged.push(column.name);
    } else if (kind === BINARY) {
      throw new PgoutputProtocolError('binary tuple data was not requested and is not supported');
    } else {
      throw new PgoutputProtocolError(`unknown tuple column kind '${String.fromCharCode(kind)}'`);
    }
  }
  return unchanged ? { row, unchanged } : { row };
}

/**
 * Decodes an Insert, Update, Delete or Truncate message of a committed transaction into its
 * change event. `r` stands after the message's tag (and, in a stream block, its xid). Update and
 * delete carry `key` (replica identity columns) when the old tuple was sent, and `before` when it
 * was the whole old row (REPLICA IDENTITY FULL).
 */
export function decodeChange(
  r: Reader,
  tag: 'I' | 'U' | 'D' | 'T',
  relations: RelationCache,
  tx: TransactionInfo,
): ChangeEvent {
  if (tag === 'T') {
    const count = r.int32();
    r.uint8(); // options: cascade and restart identity concern the source only
    const tables: TableRef[] = [];
    for (let i = 0; i < count; i++) tables.push(relations.get(r.uint32()).table);
    const [first] = tables;
    if (!first) throw new PgoutputProtocolError('truncate of no relation');
    return {
      op: 'truncate',
      table: first,
      tables,
      xid: tx.xid,
      commitLsn: tx.commitLsn,
      commitTime: tx.commitTime,
    };
  }
  const { info, table } = relations.get(r.uint32());
  const event: ChangeEvent = {
    op: tag === 'I' ? 'insert' : tag === 'U' ? 'update' : 'delete',
    table,
    xid: tx.xid,
    commitLsn: tx.commitLsn,
    commitTime: tx.commitTime,
  };
  let marker = r.uint8();
  if (tag !== 'I' && (marker === KEY || marker === OLD)) {
    const at = r.offset;
    event.key = readRow(r, info, true).row;
    if (marker === OLD) {
      r.offset = at;
      event.before = readRow(r, info, false).row;
    }
    if (tag === 'D') return event;
    marker = r.uint8();
  } else if (tag === 'D') {
    throw new PgoutputProtocolError(`delete: expected 'K' or 'O', got '${String.fromCharCode(marker)}'`);
  }
  if (marker !== NEW) {
    throw new PgoutputProtocolError(`${event.op}: expected 'N', got '${String.fromCharCode(marker)}'`);
  }
  const { row, unchanged } = readRow(r, info, false);
  event.after = row;
  if (unchanged) event.unchangedToast = unchanged;
  return event;
}
