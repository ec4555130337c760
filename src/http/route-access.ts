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
    /** For `action: false`: the action recorded when the call is refused before its handler runs. */
    refusalAction?: string;
    /** For a GET that starts something (an SSO sign-in): the action its refusals are recorded under. */
    failureAction?: string;
    /**
     * The body asks for an action (`{"state": "start"}`) rather than defining a resource: a value
     * outside what it allows is an invalid request, 400, not a definition that failed validation, 422.
     */
    actionBody?: boolean;
  }
}

/** Methods that change nothing: no audit action, no cross-site check. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
