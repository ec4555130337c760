/**
 * The JSON envelope every broker sink publishes: one message per row change, per truncated table
 * and per snapshot row.
 *
 * ```json
 * {"id":"0/16B3748/public/orders/2","op":"update","table":"public.orders","key":{"id":42},
 *  "before":null,"after":{"id":42,"total":"19.90","paid":true},"unchanged":["notes"],
 *  "lsn":"0/16B3748","commit_time":"2024-05-01T12:00:00.123456Z"}
 * ```
 *
 * - `op`: `insert`, `update`, `delete`, `truncate`, or `read` for a row of the initial copy.
 * - `key`: the primary key columns of the row the change applies to: the new row's for an insert,
 *   the row's key before the change for an update (it differs from `after` when the key changed)
 *   and a delete; null for a truncate.
 * - `before`: the old row, only when the source table's REPLICA IDENTITY is FULL; else null.
 * - `after`: the new row of an insert, update or read; null for a delete and a truncate. The
 *   columns of an update whose large (TOAST) value did not change are absent from it and listed in
 *   `unchanged` (present only then): the consumer keeps the value it has.
 * - `lsn`: the position of the transaction's commit record at the source, the same for every change
 *   of a transaction; `commit_time` its commit time. Both are null for a `read`: a snapshot row
 *   belongs to no transaction.
 * - `id`: stable across redeliveries, for consumers to drop a message they have seen:
 *   `<lsn>/<schema>/<table>/<n>`, `n` counting the messages of that table in its transaction from
 *   0, and `snapshot/<schema>/<table>/<key>` for a read (`<key>` the key columns' text values as a
 *   JSON array); `%` and `/` in the names are percent-encoded. Messages are counted per table
 *   because a table being copied again (a backfill) has its changes held and published after
 *   those of the other tables of the same transactions. A read is named by its key, not its
 *   position, because a partition copied again after a crash reads a new snapshot of the source,
 *   in no particular order.
 *
 * Values are typed (`core/values.ts`): numbers, booleans, JSON values as JSON (the source's text,
 * verbatim: every digit of a number, a `json` value's duplicate keys and spacing), text, ISO 8601
 * dates and times; 64-bit integers and numerics as strings, so no digit is lost to a JSON double;
 * float NaN and ±Infinity as the strings `NaN`, `Infinity`, `-Infinity`, a float's `-0` as `-0`;
 * bytes as base64; arrays as JSON arrays of the same, but an array with lower bounds other than 1
 * as the source's text (`[0:1]={1,2}`); dates and times that ISO 8601 cannot write (`infinity`,
 * BC, years past 9999) as the source's text. A column the sink does not know the type of (added
 * at the source since) comes as the source's text.
 */
import type { ChangeEvent, ChangeOp, Row, TableRef, TableSchema } from '../core/change.js';
import { formatLsn } from '../core/lsn.js';
import {
  arrayOf,
  isArrayType,
  type JsonValue,
  typedValue,
  type Value,
  type ValueType,
  valueTypeOf,
} from '../core/values.js';

/**
 * A JSON value as the source wrote it, put into the message verbatim: parsed into JavaScript it
 * would lose digits past a double's (9007199254740993, 29-digit integers, 1e1000) and a `json`
 * value's duplicate keys. `envelopeText` writes it.
 */
export class RawJson {
  constructor(readonly text: string) {}

  // JSON.stringify calls this for each one: a placeholder that envelopeText replaces with the text.
  toJSON(): string {
    rawTexts.push(this.text);
    return `\u0000${rawTexts.length - 1}`;
  }
}

/** A value of an envelope's row: JSON, with the source's JSON values kept as their text. */
export type EnvelopeValue = JsonValue | RawJson | EnvelopeValue[];

// The texts of the RawJson values met by the serialisation under way (it is synchronous).
let rawTexts: string[] = [];
// A placeholder as JSON.stringify writes it: no value from the source holds a NUL character.
const PLACEHOLDER = /"\\u0000(\d+)"/g;

/** A message's text (or one value's): JSON, with every JSON value of the source verbatim. */
export function envelopeText(envelope: ChangeEnvelope | EnvelopeValue): string {
  rawTexts = [];
  const text = JSON.stringify(envelope);
  if (rawTexts.length === 0) return text;
  const raws = rawTexts;
  rawTexts = [];
  return text.replace(PLACEHOLDER, (_, index: string) => raws[Number(index)] as string);
}

export type EnvelopeOp = ChangeOp | 'read';

/** One message of a broker sink. */
export interface ChangeEnvelope {
  id: string;
  op: EnvelopeOp;
  table: string;
  key: Record<string, EnvelopeValue> | null;
  before: Record<string, EnvelopeValue> | null;
  after: Record<string, EnvelopeValue> | null;
  unchanged?: string[];
  lsn: string | null;
  commit_time: string | null;
}

/** An envelope with the table it is about (a truncate's message is about one of its tables). */
export interface AddressedEnvelope {
  table: TableRef;
  envelope: ChangeEnvelope;
  /** Its number among its table's messages in its transaction, the `<n>` of its id. */
  sequence: number;
}

/** How many messages of a transaction have been numbered for one table. */
export interface TableCount {
  /** `commitLsn` of the transaction, as its messages carry it (`lsn`). */
  commitLsn: string;
  count: number;
}

/**
 * The numbering of each table's last transaction, by `tablePath`. A table's changes come in
 * commit order, each transaction's together, but not always in one batch: a transaction too
 * large for one batch comes in several, and a table copied again has its held changes come after
 * the rest of their transactions. So a table's count goes on while its transaction does.
 */
export type Numbering = ReadonlyMap<string, Readonly<TableCount>>;

// JSON.stringify writes -0 as 0: the float's sign is kept by writing its text as it is.
const NEGATIVE_ZERO = new RawJson('-0');

/** The JSON form of a typed value (see the module comment). */
export function jsonOf(value: Value): EnvelopeValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (Object.is(value, -0)) return NEGATIVE_ZERO;
    return Number.isFinite(value) ? value : String(value);
  }
  if (typeof value === 'bigint') return value.toString();
  if (Buffer.isBuffer(value)) return value.toString('base64');
  if (Array.isArray(value)) return value.map((v) => jsonOf(v as Value));
  return value as JsonValue;
}

// Each table's column types, worked out once per table shape.
const columnTypes = new WeakMap<TableSchema, Map<string, ValueType>>();
function typesOf(table: TableSchema): Map<string, ValueType> {
  let types = columnTypes.get(table);
  if (!types) {
    types = new Map(table.columns.map((c) => [c.name, valueTypeOf(c)]));
    columnTypes.set(table, types);
  }
  return types;
}

const JSON_ARRAY = arrayOf('json');

/** A column's value for the envelope: JSON values (and arrays of them) as their source text. */
function envelopeValue(type: ValueType, text: string | null): EnvelopeValue {
  if (text === null) return null;
  if (type === 'json') return new RawJson(text);
  // Lower bounds other than 1 (`[0:1]={1,2}`, the only arrays that print them): a JSON array
  // cannot keep them, so the source's text is sent, which PostgreSQL reads back as it was.
  if (isArrayType(type) && text.startsWith('[')) return text;
  if (isArrayType(type) && type === JSON_ARRAY) {
    // Split as an array of text: each element is the JSON text of one value.
    const raw = (items: Value): EnvelopeValue =>
      Array.isArray(items)
        ? items.map((v) => raw(v as Value))
        : items === null
          ? null
          : new RawJson(items as string);
    return raw(typedValue(arrayOf('text'), text));
  }
  return jsonOf(typedValue(type, text));
}

/** Sets a column of a JSON row; a column may be called __proto__, which assigning would make the prototype. */
function setColumn(out: Record<string, EnvelopeValue>, name: string, value: EnvelopeValue): void {
  if (name === '__proto__')
    Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
  else out[name] = value;
}

/** A row as JSON, in the row's own column order; a column not in `table` is the source's text. */
function jsonRow(table: TableSchema, row: Row): Record<string, EnvelopeValue> {
  const types = typesOf(table);
  const out: Record<string, EnvelopeValue> = {};
  for (const name of Object.keys(row))
    setColumn(out, name, envelopeValue(types.get(name) ?? 'other', row[name] ?? null));
  return out;
}

/**
 * The key columns of a row, in key order; null when the row lacks one of them. `json`: the row as
 * jsonRow made it, whose values are taken instead of being made again.
 */
function keyOf(
  table: TableSchema,
  row: Row | undefined,
  json?: Record<string, EnvelopeValue>,
): Record<string, EnvelopeValue> | null {
  if (!row || !table.keyColumns.every((name) => Object.hasOwn(row, name))) return null;
  const types = typesOf(table);
  const key: Record<string, EnvelopeValue> = {};
  for (const name of table.keyColumns)
    setColumn(
      key,
      name,
      json ? (json[name] as EnvelopeValue) : envelopeValue(types.get(name) ?? 'other', row[name] ?? null),
    );
  return key;
}

const encodeName = (name: string) => name.replaceAll('%', '%25').replaceAll('/', '%2F');

/** `<schema>/<table>`, `%` and `/` in the names percent-encoded: a table as ids name it. */
export const tablePath = (table: TableRef): string =>
  `${encodeName(table.schema)}/${encodeName(table.table)}`;

/** The id of a snapshot row: by table and key, stable whatever order a re-copied partition comes in. */
export function snapshotEventId(table: TableSchema, row: Row): string {
  const key = JSON.stringify(table.keyColumns.map((name) => row[name] ?? null));
  return `snapshot/${tablePath(table)}/${key}`;
}

/** The `read` envelope of one snapshot row. */
export function readEnvelope(table: TableSchema, row: Row): ChangeEnvelope {
  const after = jsonRow(table, row);
  return {
    id: snapshotEventId(table, row),
    op: 'read',
    table: `${table.schema}.${table.table}`,
    key: keyOf(table, row, after),
    before: null,
    after,
    lsn: null,
    commit_time: null,
  };
}

/**
 * The envelopes of a batch's changes, in order, numbered within their transactions and tables:
 * `carried` is the numbering earlier batches left, and the returned `numbering` is that one with
 * this batch's messages counted (a new map: `carried` stays as it was, for a batch that fails). A
 * truncate gives one envelope per table.
 */
export function changeEnvelopes(
  changes: readonly ChangeEvent[],
  schemaOf: (table: TableRef) => TableSchema,
  carried: Numbering,
): { envelopes: AddressedEnvelope[]; numbering: Map<string, TableCount> } {
  const numbering = new Map(carried);
  const envelopes: AddressedEnvelope[] = [];
  const next = (commitLsn: string, table: TableRef) => {
    const path = tablePath(table);
    const last = numbering.get(path);
    const sequence = last?.commitLsn === commitLsn ? last.count : 0;
    numbering.set(path, { commitLsn, count: sequence + 1 });
    return { id: `${commitLsn}/${path}/${sequence}`, sequence };
  };
  // A transaction's changes come together: its position is formatted once.
  let position: bigint | undefined;
  let lsn = '';
  for (const change of changes) {
    if (change.commitLsn !== position) {
      position = change.commitLsn;
      lsn = formatLsn(position);
    }
    if (change.op === 'truncate') {
      for (const table of change.tables ?? [change.table]) {
        const { id, sequence } = next(lsn, table);
        envelopes.push({
          table,
          sequence,
          envelope: {
            id,
            op: 'truncate',
            table: `${table.schema}.${table.table}`,
            key: null,
            before: null,
            after: null,
            lsn,
            commit_time: change.commitTime,
          },
        });
      }
      continue;
    }
    const schema = schemaOf(change.table);
    const { id, sequence } = next(lsn, change.table);
    const before = change.before ? jsonRow(schema, change.before) : null;
    const after = change.after ? jsonRow(schema, change.after) : null;
    const keyRow = change.key ?? change.before ?? change.after;
    const keyJson = change.key ? undefined : (before ?? after ?? undefined);
    const envelope: ChangeEnvelope = {
      id,
      op: change.op,
      table: `${change.table.schema}.${change.table.table}`,
      key: keyOf(schema, keyRow, keyJson),
      before,
      after,
      lsn,
      commit_time: change.commitTime,
    };
    if (change.unchangedToast && change.unchangedToast.length > 0) {
      // `unchanged` goes before `lsn`, next to `after`, for a reader of the raw JSON.
      const { lsn: text, commit_time, ...rest } = envelope;
      envelopes.push({
        table: change.table,
        sequence,
        envelope: { ...rest, unchanged: [...change.unchangedToast], lsn: text, commit_time },
      });
    } else {
      envelopes.push({ table: change.table, sequence, envelope });
    }
  }
  return { envelopes, numbering };
}
