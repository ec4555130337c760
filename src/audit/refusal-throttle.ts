import type { AuditEvent } from './audit-event.js';

export interface RefusalThrottleOptions {
  /** Events kept per address and window; the rest are counted. */
  perWindow: number;
  windowMs: number;
  /** Address and action pairs tracked at once; beyond, new ones share one count. */
  maxAddresses: number;
  now: () => number;
}

const REFUSAL_THROTTLE_DEFAULTS: RefusalThrottleOptions = {
  perWindow: 30,
  windowMs: 60_000,
  maxAddresses: 10_000,
  now: Date.now,
};

/** The action of the event that stands for an address's refusals left out of the trail. */
export const SUPPRESSED_ACTION = 'audit.refusals_suppressed';
const SHARED = '*';

interface Window {
  startedAt: number;
  kept: number;
  suppressed: number;
  address: string | undefined;
  kind: string | undefined;
}

/** Refusals of one address and kind (both unset: of many, sharing one count) left out of a window. */
export interface SuppressedRefusals {
  address: string | undefined;
  kind: string | undefined;
  suppressed: number;
  startedAt: number;
  windowMs: number;
}

/** The audit event that stands for refusals left out of the trail. */
export const suppressedEvent = (s: SuppressedRefusals): AuditEvent => ({
  actorType: 'anonymous',
  actorName: 'anonymous',
  action: SUPPRESSED_ACTION,
  outcome: 'denied',
  sourceAddress: s.address,
  details: {
    suppressed: s.suppressed,
    // Absent when many callers shared one count.
    ...(s.kind ? { refused_action: s.kind } : {}),
    window_started_at: new Date(s.startedAt).toISOString(),
    window_seconds: s.windowMs / 1000,
  },
});

/** Whether an event is a refusal of a caller who is nobody: anyone can send as many as they like. */
export const isAnonymousRefusal = (event: AuditEvent) =>
  event.actorType === 'anonymous' && event.outcome !== 'success';

/**
 * Bounds what anonymous callers can make the service write (audit events, log lines): per source
 * address, kind (an audit action, a route) and window, the
 * first `perWindow` refusals are written as they come, the rest only counted, and when the window
 * ends one event says how many were left out. A flood from one address costs a bounded number of
 * rows and lines a minute, whatever its rate.
 */
export class RefusalThrottle {
  private readonly windows = new Map<string, Window>();
  private timer: NodeJS.Timeout | undefined;
  private readonly options: RefusalThrottleOptions;

  constructor(
    private readonly emit: (summary: SuppressedRefusals) => void,
    options: Partial<RefusalThrottleOptions> = {},
  ) {
    this.options = { ...REFUSAL_THROTTLE_DEFAULTS, ...options };
  }

  /** Whether a refusal of `address` is to be written; when not, it is counted for its address's summary. */
  admit(address: string | undefined, kind: string): boolean {
    const now = this.options.now();
    // Per kind too, so that a flood of one refusal hides no other kind (a failed sign-in).
    const known = `${address ?? SHARED} ${kind}`;
    const key = this.windows.has(known) || this.windows.size < this.options.maxAddresses ? known : SHARED;
    let window = this.windows.get(key);
    if (window && now - window.startedAt >= this.options.windowMs) {
      this.close(key, window);
      window = undefined;
    }
    if (!window) {
      const shared = key === SHARED;
      window = {
        startedAt: now,
        kept: 0,
        suppressed: 0,
        address: shared ? undefined : address,
        kind: shared ? undefined : kind,
      };
      this.windows.set(key, window);
    }
    if (window.kept < this.options.perWindow) {
      window.kept += 1;
      return true;
    }
    window.suppressed += 1;
    this.schedule();
    return false;
  }

  /** Writes the summaries of every window that has ended, and forgets those windows. */
  flush(): void {
    const now = this.options.now();
    for (const [key, window] of this.windows) {
      if (now - window.startedAt >= this.options.windowMs) this.close(key, window);
    }
  }

  private close(key: string, window: Window): void {
    this.windows.delete(key);
    if (window.suppressed === 0) return;
    this.emit({
      address: window.address,
      kind: window.kind,
      suppressed: window.suppressed,
      startedAt: window.startedAt,
      windowMs: this.options.windowMs,
    });
  }

  private schedule(): void {
    if (this.timer) return;
    const oldest = Math.min(...[...this.windows.values()].map((w) => w.startedAt));
    const wait = Math.max(0, oldest + this.options.windowMs - this.options.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
      if ([...this.windows.values()].some((w) => w.suppressed > 0)) this.schedule();
    }, wait + 10);
    // A pending summary never keeps the process alive.
    this.timer.unref();
  }
}
