/**
 * Writes sent without waiting for each answer, at most `limit` unanswered at a time, so that the
 * next one is made while the server works on the last. The first failure is kept (none goes
 * unhandled) and thrown by the next `add` or by `settle`, and nothing more is sent after it.
 */
export class InFlight {
  private readonly pending = new Set<Promise<void>>();
  private failure: { error: unknown } | undefined;

  constructor(private readonly limit: number) {}

  /** Sends once there is room; throws an earlier write's failure instead. */
  async add(send: () => Promise<unknown>): Promise<void> {
    while (this.pending.size >= this.limit) await Promise.race(this.pending);
    this.throwFailure();
    const write: Promise<void> = Promise.resolve()
      .then(send)
      .then(
        () => undefined,
        (error: unknown) => {
          this.failure ??= { error };
        },
      )
      .finally(() => this.pending.delete(write));
    this.pending.add(write);
  }

  /** Waits for every write sent; throws the first failure. */
  async settle(): Promise<void> {
    await Promise.all(this.pending);
    this.throwFailure();
  }

  private throwFailure(): void {
    if (this.failure) throw this.failure.error;
  }
}
