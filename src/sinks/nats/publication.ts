import type { AckOutcome, AckOwner, InFlight } from './ack-inbox.js';

/** One message to publish, in its place in the order. */
export interface Outgoing {
  subject: string;
  payload: string;
  /** `Nats-Msg-Id`: the stream drops a message whose id it took within its duplicate window. */
  msgId: string;
  /**
   * The rows it is about (see row-keys.ts): it is published only once every earlier message about
   * one of them is acknowledged. null: its whole table (a truncate), published alone.
   */
  rows: readonly string[] | null;
}

/** Where messages are published, each owner told of its acks (AckInbox). */
export interface AckSender {
  publish(
    owner: AckOwner,
    subject: string,
    payload: string,
    msgId: string,
    rows: readonly string[] | null,
  ): void;
}

/** What a failed publish is turned into, knowing its subject. */
export type FailureOf = (error: Error, subject: string) => Error;

/**
 * The messages of one batch or snapshot partition, published in order with up to `window` awaiting
 * their acks at once, all acknowledged by `stream` before `settle` resolves.
 *
 * A message is published only once every earlier one about the same row is stored, and a truncate
 * only alone: when one fails (refused by the stream, timed out, its connection lost), no later
 * change of its rows has been sent. Publishing stops at the first failure, and the batch is
 * published again, in order, from the checkpoint: the stream drops the ones it already took (same
 * ids), so each row's changes are stored in order. Without this, a change refused while the next
 * change of its row was stored would be stored after it when published again.
 */
export class Publication implements AckOwner {
  private pending = 0;
  /** Rows with a message awaiting its ack: at most one each. */
  private readonly rowsInFlight = new Set<string>();
  /** A truncate awaits its ack: nothing else is published meanwhile. */
  private alone = false;
  private failure: Error | undefined;
  private waiter: { ready: () => boolean; resolve: () => void } | undefined;

  constructor(
    private readonly inbox: AckSender,
    private readonly stream: string,
    private readonly window: number,
    private readonly failureOf: FailureOf,
  ) {}

  /** Publishes the messages after the ones before; resolves once each is sent, not acknowledged. */
  async send(messages: readonly Outgoing[]): Promise<void> {
    for (const m of messages) {
      // A full window waits for half its room back, so that a wait is not one ack long.
      if (this.pending >= this.window)
        await this.until(() => this.failure !== undefined || this.pending <= this.window / 2);
      if (!this.free(m)) await this.until(() => this.free(m));
      if (this.failure) break;
      try {
        this.inbox.publish(this, m.subject, m.payload, m.msgId, m.rows);
      } catch (error) {
        this.fail(error, m.subject);
        break;
      }
      this.pending++;
      if (m.rows === null) this.alone = true;
      else for (const row of m.rows) this.rowsInFlight.add(row);
    }
    if (this.failure) await this.settle();
  }

  /** Resolves once every message sent is acknowledged; throws the first failure, once all are settled. */
  async settle(): Promise<void> {
    if (this.pending > 0) await this.until(() => this.pending === 0);
    if (this.failure) throw this.failure;
  }

  acked(entry: InFlight, outcome: AckOutcome): void {
    this.pending--;
    if (entry.rows === null) this.alone = false;
    else for (const row of entry.rows) this.rowsInFlight.delete(row);
    if (outcome.error) this.fail(outcome.error, entry.subject);
    else if (outcome.stream !== this.stream)
      this.fail(
        new Error(
          `subject ${entry.subject} is stored in stream ${outcome.stream}, not in stream ${this.stream}`,
        ),
        entry.subject,
      );
    const waiter = this.waiter;
    if (waiter?.ready()) {
      this.waiter = undefined;
      waiter.resolve();
    }
  }

  /**
   * Whether `m` may go now (or publishing stop, after a failure): no truncate awaits its ack (nor
   * anything, for a truncate), none of its rows awaits one, and the window has room.
   */
  private free(m: Outgoing): boolean {
    if (this.failure) return true;
    if (this.alone || (m.rows === null && this.pending > 0)) return false;
    if (this.pending >= this.window) return false;
    if (m.rows !== null) for (const row of m.rows) if (this.rowsInFlight.has(row)) return false;
    return true;
  }

  /** Waits until `ready` holds, checked at each ack. */
  private until(ready: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      this.waiter = { ready, resolve };
    });
  }

  private fail(error: unknown, subject: string): void {
    this.failure ??= this.failureOf(error instanceof Error ? error : new Error(String(error)), subject);
  }
}
