import type { WebSocket } from '@fastify/websocket';
import type { LiveMessage } from '../live/live-messages.js';

/**
 * What a client of `/v1/live` may cost. The feed goes from server to client: a client has
 * nothing to send but the odd ping, so what it sends is bounded tightly; and a client that
 * reads too slowly is dropped rather than have its messages pile up in memory without end.
 */
export const LIVE_LIMITS = {
  /** A bigger frame is refused as soon as its header announces it: close 1009. */
  maxPayloadBytes: 64 * 1024,
  /** Messages and pings a client may send per window; one more closes it with 1008. */
  inboundMessages: 20,
  inboundWindowMs: 10_000,
  /** Bytes waiting to be sent to a client beyond which it is dropped with 1013. */
  maxBufferedBytes: 4 * 1024 * 1024,
} as const;

/** RFC 6455 close codes the feed uses. */
const CLOSE_POLICY_VIOLATION = 1008;
export const CLOSE_TRY_AGAIN_LATER = 1013;

/** One client of the live feed: sends it messages and holds it to LIVE_LIMITS. */
export class LiveSocket {
  private windowStart = Date.now();
  private inbound = 0;
  private ended = false;

  /** `onEnd` runs once, when the client leaves or is dropped. */
  constructor(
    private readonly socket: WebSocket,
    private readonly onEnd: () => void,
  ) {
    socket.on('message', () => this.count());
    socket.on('ping', () => this.count());
    // ws emits 'close' after any 'error' too.
    socket.once('close', () => this.end());
  }

  send(message: LiveMessage): void {
    if (this.ended || this.socket.readyState !== this.socket.OPEN) return;
    if (this.socket.bufferedAmount > LIVE_LIMITS.maxBufferedBytes) {
      this.close(CLOSE_TRY_AGAIN_LATER, 'reading too slowly: more than 4 MiB waits to be sent');
      return;
    }
    this.socket.send(JSON.stringify(message));
  }

  private count(): void {
    const now = Date.now();
    if (now - this.windowStart >= LIVE_LIMITS.inboundWindowMs) {
      this.windowStart = now;
      this.inbound = 0;
    }
    if (++this.inbound > LIVE_LIMITS.inboundMessages) {
      this.close(CLOSE_POLICY_VIOLATION, 'the live feed is sent by the server; clients only ping, seldom');
    }
  }

  close(code: number, reason: string): void {
    this.end();
    // A client that does not read never gets the close frame: ws cuts it 30 s later.
    this.socket.close(code, reason);
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd();
  }
}
