import { parseLsn } from '../core/lsn.js';
import { type AddressedEnvelope, type Numbering, type TableCount, tablePath } from './change-envelope.js';

/**
 * Of each table, the messages published of a transaction not finished at the checkpoint (one too
 * large for a batch, published in pieces under the checkpoint before it), by `tablePath`: kept in
 * the checkpoint's detail, so that the transaction replayed whole after a restart is published
 * from where it had got to, not from its start.
 */
export type Unfinished = Map<string, TableCount>;

/** The unfinished transactions a checkpoint's detail records. */
export function unfinishedOf(detail: Record<string, unknown> | undefined): Unfinished {
  const recorded = detail?.unfinished;
  if (recorded === null || typeof recorded !== 'object') return new Map();
  return new Map(Object.entries(recorded as Record<string, TableCount>));
}

/** The checkpoint detail that records `unfinished`. */
export const detailOf = (unfinished: Unfinished): Record<string, unknown> =>
  unfinished.size === 0 ? {} : { unfinished: Object.fromEntries(unfinished) };

/**
 * Whether a message is among those published of a transaction unfinished at the checkpoint. Any
 * other message is new: the stream starts again at the checkpoint, and a change of a transaction
 * older than it (held while its table was copied again) was never published.
 */
export function publishedBefore(
  { table, envelope, sequence }: AddressedEnvelope,
  unfinished: Numbering,
): boolean {
  const published = unfinished.get(tablePath(table));
  return published !== undefined && envelope.lsn === published.commitLsn && sequence < published.count;
}

/**
 * What to remember as published of the transactions unfinished at `checkpoint` (committed past
 * it): this batch's numbering, and what an earlier run had published where it got further.
 */
export function unfinishedAt(checkpoint: bigint, before: Numbering, numbering: Numbering): Unfinished {
  const unfinished: Unfinished = new Map();
  for (const [path, counted] of [...before, ...numbering]) {
    if (parseLsn(counted.commitLsn) < checkpoint) continue;
    const earlier = unfinished.get(path);
    const count =
      earlier?.commitLsn === counted.commitLsn ? Math.max(earlier.count, counted.count) : counted.count;
    unfinished.set(path, { commitLsn: counted.commitLsn, count });
  }
  return unfinished;
}
