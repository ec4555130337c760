import type { CopyPace } from '../snapshot/copy-pace.js';

/** A wait shorter than this is not waited: the copy runs a little ahead instead. */
const LEAST_WAIT_MS = 2;

/**
 * The pace of a copy made while other pipelines read the same shared source stream: at most
 * `rowsPerSecond` rows, over all its partitions, while they stream changes. The copy's source session, the service and its
 * sink share their machines' cores with the walsender and the other pipelines' writes; at full
 * speed its bulk makes their changes late for as long as it runs (measured in
 * bench/source-cost.ts). While no other pipeline streams changes, the copy goes as fast as it can.
 */
export class SharedCopyPace implements CopyPace {
  /** When the rows passed so far are due, at the rate (performance.now() ms). */
  private due = 0;

  constructor(
    private readonly rowsPerSecond: number,
    /** Whether other pipelines stream changes from the stream now. */
    private readonly othersStream: () => boolean,
    private readonly now: () => number = () => performance.now(),
  ) {}

  turn(rows: number): Promise<void> | undefined {
    const now = this.now();
    if (!this.othersStream()) {
      this.due = now;
      return undefined;
    }
    this.due = Math.max(this.due, now) + (rows * 1000) / this.rowsPerSecond;
    const wait = this.due - now - (rows * 1000) / this.rowsPerSecond;
    if (wait < LEAST_WAIT_MS) return undefined;
    return new Promise((resolve) => setTimeout(resolve, wait));
  }
}
