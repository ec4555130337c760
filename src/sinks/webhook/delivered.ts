import { parseLsn } from '../../core/lsn.js';
import { type AddressedEnvelope, tablePath } from '../change-envelope.js';

/**
 * What the receiver has of the transactions past the checkpoint: how many events of each table
 * in each such transaction were posted. Kept with the checkpoint (its `detail`) so that a replay
 * from the checkpoint skips them rather than posts them again: a transaction too large for one
 * batch is posted in pieces under the checkpoint before it, and a batch too large for one request
 * in several requests before its checkpoint is written. Keyed by `JSON([tablePath, commitLsn])`.
 */
export type Unfinished = Map<string, number>;

const keyOf = (path: string, commitLsn: string) => JSON.stringify([path, commitLsn]);

/** The note as stored: a list, its entries readable on their own. */
interface Entry {
  table: string;
  commit_lsn: string;
  count: number;
}

/** The `posted` note of a stored checkpoint's detail; anything unreadable counts as none. */
export function unfinishedOf(detail: Record<string, unknown> | undefined): Unfinished {
  const unfinished: Unfinished = new Map();
  const note = detail?.posted;
  if (!Array.isArray(note)) return unfinished;
  for (const entry of note as Partial<Entry>[]) {
    const { table, commit_lsn, count } = entry ?? {};
    if (typeof table === 'string' && typeof commit_lsn === 'string' && Number.isSafeInteger(count)) {
      unfinished.set(keyOf(table, commit_lsn), count as number);
    }
  }
  return unfinished;
}

/** The checkpoint's detail for a note: `{}` when there is nothing past it. */
export function detailOf(unfinished: Unfinished): Record<string, unknown> {
  if (unfinished.size === 0) return {};
  const posted = [...unfinished].map(([key, count]): Entry => {
    const [table, commit_lsn] = JSON.parse(key) as [string, string];
    return { table, commit_lsn, count };
  });
  return { posted };
}

/** Whether an event is among those already posted. Any other is new. */
export function postedBefore(
  { table, envelope, sequence }: AddressedEnvelope,
  unfinished: Unfinished,
): boolean {
  // Nearly always nothing is noted: no key is made then.
  if (envelope.lsn === null || unfinished.size === 0) return false;
  const posted = unfinished.get(keyOf(tablePath(table), envelope.lsn));
  return posted !== undefined && sequence < posted;
}

/**
 * What to note as posted past the checkpoint `at`: the earlier note, and the events of `posted` (which
 * count on from it: their sequence numbers go on across batches), each count the greater.
 * Transactions at or before the checkpoint are done and forgotten.
 */
export function unfinishedAt(
  at: bigint,
  before: Unfinished,
  posted: readonly AddressedEnvelope[],
): Unfinished {
  const unfinished: Unfinished = new Map();
  const count = (key: string, commitLsn: string, n: number) => {
    if (parseLsn(commitLsn) < at) return;
    unfinished.set(key, Math.max(unfinished.get(key) ?? 0, n));
  };
  for (const [key, n] of before) count(key, (JSON.parse(key) as [string, string])[1], n);
  // A transaction's events of one table come together, numbered upwards: each run is counted
  // once, at its last event, rather than a key made and a position read for every event.
  for (let i = 0; i < posted.length; i++) {
    const { table, envelope, sequence } = posted[i] as AddressedEnvelope;
    const next = posted[i + 1];
    if (envelope.lsn === null) continue;
    if (next && next.table === table && next.envelope.lsn === envelope.lsn) continue;
    count(keyOf(tablePath(table), envelope.lsn), envelope.lsn, sequence + 1);
  }
  return unfinished;
}
