import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { VERSION } from '../../version.js';
import { requestFailed, statusFailed, timedOut, WebhookError } from './delivery-errors.js';
import { guardedConnector } from './guarded-connector.js';
import { SIGNATURE_HEADER, signatureHeader } from './signature.js';
import type { WebhookSettings } from './webhook-connection-type.js';

/** How the client posts, from the sink's properties. */
export interface ClientOptions {
  timeoutMs: number;
  maxAttempts: number;
  pipelineId: string;
}

/** An answer's body is read up to this many bytes (to reuse the connection), then dropped. */
const ANSWER_MAX_BYTES = 64 * 1024;
/** Of it, this much is kept for an error's excerpt. */
const EXCERPT_BYTES = 1024;
/** Backoff between attempts: doubling from the first, capped, with jitter. */
const FIRST_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 10_000;

const USER_AGENT = `replicator/${VERSION.replace(/^v/, '')}`;

/**
 * Posts signed JSON bodies to one receiver. Connections are made only to addresses the
 * connection may reach: every address a name resolves to is checked in the connection's own DNS
 * lookup, and the socket's peer once more when it is connected (that covers an address literal,
 * which is not looked up). Redirects are not followed. Requests are tried again, within
 * `maxAttempts`, after a timeout, a lost connection, 408, 429 or 5xx.
 */
export class WebhookClient {
  private readonly agent: Agent;
  private readonly closing = new AbortController();

  constructor(
    private readonly settings: WebhookSettings,
    private readonly options: ClientOptions,
  ) {
    this.agent = new Agent({ connect: guardedConnector(settings, options.timeoutMs) });
  }

  /** Posts `body` until the receiver answers 2xx; throws the last attempt's WebhookError. */
  async post(body: string, idempotencyKey: string): Promise<void> {
    // Encoded once: the signature and every attempt send the same bytes.
    const bytes = Buffer.from(body, 'utf8');
    for (let attempt = 1; ; attempt++) {
      let failure: WebhookError;
      try {
        await this.attempt(bytes, idempotencyKey);
        return;
      } catch (error) {
        if (this.closing.signal.aborted) throw new Error('the webhook sink was closed during a request');
        failure = error instanceof WebhookError ? error : requestFailed(this.settings.endpoint, error);
      }
      if (!failure.retryHere || attempt >= this.options.maxAttempts) throw failure;
      const backoff = Math.min(FIRST_BACKOFF_MS * 2 ** (attempt - 1), MAX_BACKOFF_MS);
      const delay = Math.max(backoff / 2 + (Math.random() * backoff) / 2, failure.retryAfterMs ?? 0);
      try {
        await sleep(delay, undefined, { signal: this.closing.signal });
      } catch {
        throw new Error('the webhook sink was closed while waiting to try again');
      }
    }
  }

  private async attempt(body: Buffer, idempotencyKey: string): Promise<void> {
    const { endpoint } = this.settings;
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(timedOut(endpoint, this.options.timeoutMs)),
      this.options.timeoutMs,
    );
    const signal = AbortSignal.any([this.closing.signal, timeout.signal]);
    try {
      const answer = await request(this.settings.url, {
        dispatcher: this.agent,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'idempotency-key': idempotencyKey,
          'x-replicator-pipeline': this.options.pipelineId,
          [SIGNATURE_HEADER]: signatureHeader(this.settings.secret, Math.floor(Date.now() / 1000), body),
        },
        body,
        signal,
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
      });
      const head = await readCapped(answer.body);
      if (answer.statusCode >= 200 && answer.statusCode < 300) return;
      throw statusFailed(endpoint, answer.statusCode, answer.headers['retry-after'], head);
    } catch (error) {
      if (timeout.signal.aborted && !this.closing.signal.aborted) throw timeout.signal.reason;
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Abandons a request or wait under way, and closes the connections. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closing.signal.aborted) return;
    this.closing.abort(new Error('the webhook sink is closed'));
    await this.agent.destroy().catch(() => undefined);
  }
}

/**
 * Reads an answer's body up to ANSWER_MAX_BYTES, keeping its first EXCERPT_BYTES; a longer one is
 * dropped with its connection rather than read to the end.
 */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<Buffer> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let read = 0;
  for await (const chunk of body) {
    read += chunk.length;
    if (keptBytes < EXCERPT_BYTES) {
      const part = chunk.subarray(0, EXCERPT_BYTES - keptBytes);
      kept.push(part);
      keptBytes += part.length;
    }
    if (read > ANSWER_MAX_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(kept);
}
