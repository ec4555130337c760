import { JetStreamApiError } from '@nats-io/jetstream';
import {
  createInbox,
  errors,
  headers,
  type Msg,
  type NatsConnection,
  type Subscription,
} from '@nats-io/transport-node';

/** What a JetStream publish came to: the stream that stored it, or why it failed. */
export type AckOutcome = { stream: string; error?: undefined } | { stream?: undefined; error: Error };

/** Who is told how each of its publishes came to. */
export interface AckOwner {
  acked(entry: InFlight, outcome: AckOutcome): void;
}

/** A publish awaiting its ack. */
export interface InFlight {
  readonly owner: AckOwner;
  readonly subject: string;
  /** The rows it is about (see Outgoing.rows in publication.ts). */
  readonly rows: readonly string[] | null;
  readonly sentAt: number;
}

const MSG_ID = 'Nats-Msg-Id';

/**
 * The acks of a connection's JetStream publishes, as nats.go's PublishAsync takes them: each
 * publish is a plain message whose reply subject is a token under one inbox, and a single
 * subscription to that inbox hands each ack to its publish's owner. The client's request API
 * instead makes a promise, a timer and an error object for every message. A publish not acked
 * within `timeoutMs` fails with a TimeoutError; every one fails when the connection closes.
 */
export class AckInbox {
  private readonly prefix: string;
  private readonly subscription: Subscription;
  /**
   * How an ack from `stream` starts: one that does is read without parsing it. The server writes
   * a stored or duplicate message's ack so, and an error's as `{"error":...`.
   */
  private readonly ackStart: Uint8Array;
  /** One set of headers, encoded by each publish as it is made. */
  private readonly headers = headers();
  /** In publish order: the first is the oldest. */
  private readonly pending = new Map<number, InFlight>();
  private next = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Why no ack can come any more: the connection closed, or the inbox's subscription failed. */
  private broken: Error | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly stream: string,
    private readonly timeoutMs: number,
  ) {
    this.ackStart = new TextEncoder().encode(`{"stream":${JSON.stringify(stream)},`);
    const inbox = createInbox();
    this.prefix = `${inbox}.`;
    this.subscription = nc.subscribe(`${inbox}.*`, {
      callback: (error, msg) => (error ? this.failAll(error) : this.received(msg)),
    });
    void nc.closed().then(() => this.failAll(new errors.ClosedConnectionError()));
  }

  /**
   * Publishes `payload` to `subject` under its `Nats-Msg-Id`; `owner` is told of its ack. Throws
   * when no ack could come (a closed connection, a failed inbox).
   */
  publish(
    owner: AckOwner,
    subject: string,
    payload: string,
    msgId: string,
    rows: readonly string[] | null,
  ): void {
    if (this.broken) throw this.broken;
    const token = this.next++;
    this.headers.set(MSG_ID, msgId);
    this.nc.publish(subject, payload, { reply: `${this.prefix}${token}`, headers: this.headers });
    this.pending.set(token, { owner, subject, rows, sentAt: performance.now() });
    this.timer ??= setTimeout(() => this.expire(), this.timeoutMs).unref();
  }

  private received(msg: Msg): void {
    const token = Number(msg.subject.slice(this.prefix.length));
    const entry = this.pending.get(token);
    // A late ack of a publish that already timed out.
    if (!entry) return;
    this.pending.delete(token);
    const data = msg.data;
    entry.owner.acked(
      entry,
      startsWith(data, this.ackStart)
        ? { stream: this.stream }
        : outcomeOf(msg.headers?.code, data, entry.subject),
    );
  }

  /** Fails the publishes older than the timeout, and waits for the next oldest. */
  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    for (const [token, entry] of this.pending) {
      const left = entry.sentAt + this.timeoutMs - now;
      if (left > 0) {
        this.timer = setTimeout(() => this.expire(), left).unref();
        return;
      }
      this.pending.delete(token);
      entry.owner.acked(entry, { error: new errors.TimeoutError() });
    }
  }

  private failAll(error: Error): void {
    this.broken ??= error;
    clearTimeout(this.timer);
    this.timer = undefined;
    const entries = [...this.pending.values()];
    this.pending.clear();
    for (const entry of entries) entry.owner.acked(entry, { error });
    if (!this.nc.isClosed()) this.subscription.unsubscribe();
  }
}

const startsWith = (data: Uint8Array, start: Uint8Array): boolean => {
  if (data.length < start.length) return false;
  for (let i = 0; i < start.length; i++) if (data[i] !== start[i]) return false;
  return true;
};

/** An ack's outcome: the stream's answer, a JetStream error, or no stream at all (503). */
function outcomeOf(code: number | undefined, data: Uint8Array, subject: string): AckOutcome {
  if (data.length === 0) {
    return {
      error:
        code === 503
          ? new errors.NoRespondersError(subject)
          : new Error(`an empty answer (status ${code ?? 'none'}) instead of an ack`),
    };
  }
  let ack: { stream?: unknown; error?: { code: number; err_code: number; description: string } };
  try {
    ack = JSON.parse(new TextDecoder().decode(data));
  } catch {
    return { error: new Error('an answer that is not JSON instead of an ack') };
  }
  if (ack.error) return { error: new JetStreamApiError(ack.error) };
  if (typeof ack.stream !== 'string' || ack.stream === '')
    return { error: new Error('an answer that names no stream instead of an ack') };
  return { stream: ack.stream };
}
