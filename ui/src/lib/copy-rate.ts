/**
 * Copy progress of a pipeline as one figure: rows copied over rows to copy, and the rows per
 * second, measured from successive `copying[].rows_done` figures of the live feed (one a second).
 */
import type { LiveTableProgress } from '../../../src/live/live-messages';

export interface CopyFigures {
  rows_done: number;
  rows_total: number;
  /** Null until two samples a second or more apart were seen. */
  rows_per_second: number | null;
}

interface Sample {
  at: number;
  done: Map<string, number>;
}

/** Samples kept per pipeline: the rate is taken over the last few seconds, not one tick. */
const WINDOW = 5;

export class CopyRate {
  private samples: Sample[] = [];

  /** Adds the figures of one stats message (`at` in ms) and returns the copy as one figure. */
  add(copying: readonly LiveTableProgress[], at: number): CopyFigures | undefined {
    if (copying.length === 0) {
      this.samples = [];
      return undefined;
    }
    this.samples.push({ at, done: new Map(copying.map((t) => [t.table, t.rows_done])) });
    if (this.samples.length > WINDOW) this.samples.shift();
    const first = this.samples[0] as Sample;
    const seconds = (at - first.at) / 1000;
    let moved = 0;
    for (const table of copying) {
      const before = first.done.get(table.table);
      // A table that started since, or started again (a backfill): not comparable.
      if (before !== undefined && table.rows_done >= before) moved += table.rows_done - before;
    }
    return {
      rows_done: copying.reduce((sum, t) => sum + t.rows_done, 0),
      rows_total: copying.reduce((sum, t) => sum + t.rows_total, 0),
      rows_per_second: seconds >= 1 ? moved / seconds : null,
    };
  }
}
