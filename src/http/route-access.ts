import type { Permission } from '../auth/roles.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the caller needs for this route (see auth/roles.ts); every `/v1/` route declares it. */
    permission?: Permission;
    /**
     * The audit action a mutating route records (`pipeline.create`); every non-GET `/v1/` route
     * declares it. `false` for a route that records its own events (login, SSO callbacks).
     */
    action?: string | false;
  }
}

/** Methods that change nothing: no audit action, no cross-site check. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
