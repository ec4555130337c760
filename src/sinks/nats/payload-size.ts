import type { ChangeEvent, Row, TableRef } from '../../core/change.js';
import { type ChangeEnvelope, type EnvelopeValue, envelopeText } from '../change-envelope.js';
import { RefusedChangeError } from '../refused-change.js';

/** Room for the `Nats-Msg-Id` header and the protocol line, next to a message's JSON. */
const HEADER_ALLOWANCE = 512;
/** An envelope's own fields (`id`, `op`, `lsn`, `commit_time`, the punctuation), about. */
const ENVELOPE_FIELDS = 512;
/** JSON writes a character as at most 6 bytes (`\u001f`). */
const JSON_BYTES_PER_CHAR = 6;
/** The punctuation around a column of a row (quotes, colon, comma), and `null`. */
const COLUMN_PUNCTUATION = 8;

const rowChars = (row: Row | undefined): number => {
  let chars = 0;
  if (row) for (const name in row) chars += name.length + (row[name]?.length ?? 0) + COLUMN_PUNCTUATION;
  return chars;
};

/**
 * The most bytes a change's message can take, with its header: its key, old and new rows' names
 * and values, its table's name four times (`table`, `id`, twice: in the envelope and the header),
 * each character as JSON's longest escape.
 * Counted without making the message, to know whether it must be made before a batch is published.
 */
export function messageBytesBound(change: ChangeEvent): number {
  const encoded = change.encoded;
  const after = encoded
    ? encoded.byteLength + encoded.columns.reduce((n, name) => n + name.length + COLUMN_PUNCTUATION, 0)
    : rowChars(change.after);
  const unchanged = change.unchangedToast?.reduce((n, name) => n + name.length + COLUMN_PUNCTUATION, 0) ?? 0;
  const tables = change.tables ?? [change.table];
  const names = tables.reduce((n, t) => n + 4 * (t.schema.length + t.table.length + 2), 0);
  // A key's columns are among the new or old row's: counting those twice bounds it.
  const chars = 2 * after + 2 * rowChars(change.before) + rowChars(change.key) + unchanged + names;
  return JSON_BYTES_PER_CHAR * chars + ENVELOPE_FIELDS + HEADER_ALLOWANCE;
}

/**
 * Refuses a message larger than the server takes (its `max_payload`), before it is published:
 * publishing it again could never succeed.
 */
export function refuseOversized(
  table: TableRef,
  envelope: ChangeEnvelope,
  payload: string,
  maxPayload: number | undefined,
): void {
  if (!maxPayload) return;
  const room = maxPayload - envelope.id.length - HEADER_ALLOWANCE;
  // A UTF-16 unit is at most 3 bytes of UTF-8: most messages need no count.
  if (payload.length * 3 <= room) return;
  const bytes = Buffer.byteLength(payload);
  if (bytes <= room) return;
  throw new RefusedChangeError(
    table,
    envelope.key ? keyText(envelope.key) : undefined,
    `its message is about ${bytes + maxPayload - room} bytes, more than the NATS server's max_payload of ${maxPayload}`,
  );
}

const keyText = (key: Record<string, EnvelopeValue>): Record<string, string | null> =>
  Object.fromEntries(
    Object.entries(key).map(([name, value]) => [
      name,
      value === null ? null : typeof value === 'string' ? value : envelopeText(value),
    ]),
  );
