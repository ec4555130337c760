/**
 * The commit times (ms) of the transactions the applier took in and the sink has not made durable
 * yet, by where they are: the one being taken in (open, its pieces already written included: they
 * are durable only with its commit), the committed ones waiting in the batch, and those of the
 * write under way. The pipeline's lag counts from the oldest. Told of every step the applier
 * takes, it tells `publish` the oldest each time it may have changed.
 */
export class PendingCommits {
  private open: number | null = null;
  private batched: number | null = null;
  private writing: number | null = null;

  constructor(private readonly publish: (oldestMs: number | null) => void) {}

  /** A transaction committed at `commitMs` begins. */
  begin(commitMs: number): void {
    this.open = commitMs;
    this.changed();
  }

  /**
   * The open transaction's commit was taken in: with `waits`, changes of it wait in the batch;
   * otherwise it has none there (none for us, or all written in pieces) and is durable with what
   * is before it.
   */
  committed(waits: boolean): void {
    if (waits && this.open !== null) this.batched = oldest(this.batched, this.open);
    this.open = null;
    this.changed();
  }

  /** The committed transactions of the batch went to the sink. */
  writeStarted(): void {
    this.writing = oldest(this.writing, this.batched);
    this.batched = null;
    this.changed();
  }

  /** The write under way is durable (or failed: the applier then stops). */
  writeEnded(): void {
    this.writing = null;
    this.changed();
  }

  /** Nothing is pending any more (the applier stops). */
  clear(): void {
    this.open = null;
    this.batched = null;
    this.writing = null;
    this.changed();
  }

  oldest(): number | null {
    return oldest(oldest(this.open, this.batched), this.writing);
  }

  private changed(): void {
    this.publish(this.oldest());
  }
}

const oldest = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));
