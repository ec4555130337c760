import { createHash } from 'node:crypto';

/** One request's body, `{"events":[...]}`, and its idempotency key. */
export interface WebhookRequest {
  body: string;
  /** A digest of the events' ids: the same for every attempt of the same events. */
  key: string;
  events: number;
}

/**
 * Gathers serialised events into requests of at most `maxEvents` events and `maxBytes` bytes of
 * events (an event larger than that alone goes alone). The runtime's batches are whole source
 * transactions, which may pass the limits: a receiver's body limit holds all the same.
 */
export class RequestChunks {
  private events: string[] = [];
  private ids: string[] = [];
  private bytes = 0;

  constructor(
    private readonly maxEvents: number,
    private readonly maxBytes: number,
  ) {}

  /** Adds an event; returns the request to post first when the event does not fit in it. */
  add(json: string, id: string): WebhookRequest | undefined {
    const size = Buffer.byteLength(json) + 1;
    const full =
      this.events.length >= this.maxEvents || (this.events.length > 0 && this.bytes + size > this.maxBytes);
    const ready = full ? this.take() : undefined;
    this.events.push(json);
    this.ids.push(id);
    this.bytes += size;
    return ready;
  }

  /** The request gathered so far, if any, and starts a new one. */
  take(): WebhookRequest | undefined {
    if (this.events.length === 0) return undefined;
    const request = {
      body: `{"events":[${this.events.join(',')}]}`,
      key: createHash('sha256').update(this.ids.join('\n')).digest('hex').slice(0, 32),
      events: this.events.length,
    };
    this.events = [];
    this.ids = [];
    this.bytes = 0;
    return request;
  }
}
