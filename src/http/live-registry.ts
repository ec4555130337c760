import type { Authenticator, Credentials } from '../auth/authenticator.js';
import { PROJECT_PERMISSION_ROLE, roleRank } from '../auth/roles.js';
import type { RequestContext } from '../context.js';

/** How often open sockets' credentials are checked again, for changes no call here announced (another instance's). */
const LIVE_RECHECK_INTERVAL_MS = 30_000;

/** RFC 6455 close code for a socket whose credential no longer holds. */
const CLOSE_CREDENTIAL_ENDED = 1008;

export interface LiveCaps {
  perUser: number;
  perAddress: number;
}

/** One open `/v1/live` socket as the registry knows it. */
export interface LiveEntry {
  address: string;
  ctx: RequestContext;
  /** What the handshake presented; absent while authentication is off. */
  credentials: Credentials | undefined;
  close(code: number, reason: string): void;
}

/**
 * The open `/v1/live` sockets: caps how many one user and one address hold, and closes those whose
 * credential stopped holding (a token revoked, a session ended, a user disabled, a role binding
 * deleted), since a socket, once open, is never asked for its credential again by itself.
 */
export class LiveRegistry {
  private readonly entries = new Set<LiveEntry>();
  private checking: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly caps: LiveCaps,
    private readonly authenticator: Authenticator | undefined,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Why a new socket from this caller and address would exceed a cap; undefined when it would not. */
  refusal(ctx: RequestContext, address: string): string | undefined {
    const userId = ctx.principal?.userId;
    let ofUser = 0;
    let ofAddress = 0;
    for (const entry of this.entries) {
      if (userId !== undefined && entry.ctx.principal?.userId === userId) ofUser++;
      if (entry.address === address) ofAddress++;
    }
    if (userId !== undefined && ofUser >= this.caps.perUser) {
      return `you hold ${ofUser} live sockets, the most allowed (http.live_sockets_per_user): close one first`;
    }
    if (ofAddress >= this.caps.perAddress) {
      return `this address holds ${ofAddress} live sockets, the most allowed (http.live_sockets_per_address): close one first`;
    }
    return undefined;
  }

  /** Adds an open socket; returns its removal. */
  add(entry: LiveEntry): () => void {
    this.entries.add(entry);
    if (this.authenticator && !this.timer) {
      this.timer = setInterval(() => this.recheck(), LIVE_RECHECK_INTERVAL_MS);
      this.timer.unref();
    }
    return () => {
      this.entries.delete(entry);
      if (this.entries.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * Checks every socket's credential again; those that no longer hold, or now act in another
   * project or without the role to read, are closed. Calls made while one runs are folded into
   * one more run after it, so a change made during a check is not missed.
   */
  recheck(): Promise<void> {
    if (!this.authenticator) return Promise.resolve();
    if (this.checking) {
      this.again = true;
      return this.checking;
    }
    this.checking = (async () => {
      do {
        this.again = false;
        for (const entry of [...this.entries]) await this.check(entry);
      } while (this.again);
    })()
      .catch(this.onError)
      .finally(() => {
        this.checking = undefined;
      });
    return this.checking;
  }

  private async check(entry: LiveEntry): Promise<void> {
    if (!entry.credentials || !this.entries.has(entry)) return;
    const now = await this.authenticator?.authenticate(entry.credentials);
    if (!stillReads(now, entry.ctx)) {
      this.entries.delete(entry);
      entry.close(
        CLOSE_CREDENTIAL_ENDED,
        'your credential was revoked or no longer allows reading this project',
      );
    }
  }

  /** Stops the periodic check (the service is stopping; closing the server closes the sockets). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

function stillReads(now: RequestContext | undefined, then: RequestContext): boolean {
  const role = now?.principal?.role;
  return (
    now !== undefined &&
    now.projectId === then.projectId &&
    now.principal?.userId === then.principal?.userId &&
    role !== undefined &&
    roleRank(role) >= roleRank(PROJECT_PERMISSION_ROLE.read)
  );
}
