/**
 * What the consumer made of a streamed transaction it was given change by change while it
 * arrived: delivered (it holds the transaction durably, up to its commit) or not, in which case
 * the source replays it whole from its spool. The source waits for the verdict before it goes on.
 */
export class StreamVerdict {
  private decide: (delivered: boolean) => void = () => {};
  private outcome: boolean | undefined;
  /** Resolves with the verdict once it is given. */
  readonly decided: Promise<boolean>;

  constructor() {
    this.decided = new Promise((resolve) => {
      this.decide = resolve;
    });
  }

  /** True once the consumer said it delivered the transaction; false before a verdict or after "not delivered". */
  get delivered(): boolean {
    return this.outcome === true;
  }

  /** Gives the verdict; the first one stands. */
  settle(delivered: boolean): void {
    if (this.outcome !== undefined) return;
    this.outcome = delivered;
    this.decide(delivered);
  }
}
