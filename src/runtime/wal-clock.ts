/** Samples kept at most: past it, every other one of the older half goes (coarser, never wrong). */
const MAX_SAMPLES = 1_024;

/**
 * When the source wrote its WAL, as far as this process saw: the end of the source's WAL sampled
 * against this process's clock (never the source's: the two clocks may disagree). It answers how
 * long the WAL after a position has existed, which is how far behind a pipeline durable at that
 * position is, whether or not it received that WAL: paused, held for review, its sink down, its
 * stream slow. PostgreSQL's walsender keeps the same kind of table for its standbys' lag.
 *
 * The WAL after a sample's predecessor was written by the sample's time, so the age read is that
 * of the first sample past the position: at most one sampling interval short, never too long.
 */
export class WalClock {
  /** Increasing positions, each with when it was first seen. */
  private samples: { lsn: bigint; atMs: number }[] = [];

  /** The source's WAL ended at `lsn` at `atMs`. */
  observe(lsn: bigint, atMs: number): void {
    const last = this.samples.at(-1);
    if (last && lsn <= last.lsn) return;
    this.samples.push({ lsn, atMs });
    if (this.samples.length > MAX_SAMPLES) this.thin();
  }

  /** The end of the source's WAL as last seen; null before any sample. */
  end(): bigint | null {
    return this.samples.at(-1)?.lsn ?? null;
  }

  /**
   * How long (ms) the oldest WAL after `durable` has existed at `now`; 0 when the source wrote
   * nothing after it, as far as the samples tell. Samples at or before `durable` are forgotten: the
   * durable position only moves forward.
   */
  ageAfter(durable: bigint, now: number): number {
    let drop = 0;
    while (drop < this.samples.length && (this.samples[drop] as { lsn: bigint }).lsn <= durable) drop++;
    // The newest sample is kept even when reached: the next one is compared with it.
    if (drop === this.samples.length) drop--;
    if (drop > 0) this.samples.splice(0, drop);
    const first = this.samples[0];
    return first && first.lsn > durable ? Math.max(0, now - first.atMs) : 0;
  }

  /** Forgets every sample (the source is another one now). */
  clear(): void {
    this.samples = [];
  }

  private thin(): void {
    const half = Math.floor(this.samples.length / 2);
    // The first sample is kept: it dates the oldest WAL not yet durable.
    this.samples = [
      ...this.samples.slice(0, half).filter((_, i) => i % 2 === 0),
      ...this.samples.slice(half),
    ];
  }
}
