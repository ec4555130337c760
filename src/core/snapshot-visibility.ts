import type { TransactionVisibility } from './source.js';

/**
 * Which transactions an MVCC snapshot sees, from `txid_current_snapshot()` text (`xmin:xmax:xip,…`).
 * Used to split the change stream around a backfill's snapshot: a transaction the snapshot sees
 * is already in the copy; any other must be applied after it.
 */
export class SnapshotVisibility implements TransactionVisibility {
  private constructor(
    private readonly xmin: number,
    private readonly xmax: number,
    private readonly inProgress: ReadonlySet<number>,
  ) {}

  /** Parses 64-bit xids and keeps their low 32 bits, which is what the change stream carries. */
  static parse(text: string): SnapshotVisibility {
    const match = /^(\d+):(\d+):([\d,]*)$/.exec(text.trim());
    if (!match) throw new Error(`not a snapshot: ${text}`);
    const low32 = (xid: string) => Number(BigInt(xid) & 0xffffffffn);
    const xip = (match[3] as string).split(',').filter(Boolean).map(low32);
    return new SnapshotVisibility(low32(match[1] as string), low32(match[2] as string), new Set(xip));
  }

  /** Whether the committed transaction `xid` (32-bit) is visible in the snapshot. */
  sees(xid: number): boolean {
    if (precedes(xid, this.xmin)) return true;
    if (!precedes(xid, this.xmax)) return false;
    return !this.inProgress.has(xid);
  }
}

// PostgreSQL's TransactionIdPrecedes: modulo-2^32 comparison, valid across wraparound.
function precedes(a: number, b: number): boolean {
  return ((a - b) | 0) < 0;
}
