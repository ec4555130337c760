import type { FastifyInstance } from 'fastify';
import type { LiveRegistry } from './live-registry.js';
import { SAFE_METHODS } from './route-access.js';

/**
 * Calls that can end or narrow a credential: revoking a token, ending a session (logout, switching
 * project), disabling or deleting a user, deleting a role binding, a project or a workspace.
 */
const CREDENTIAL_PATHS = /^\/v1\/(tokens|sessions|auth|users|role-bindings|projects|workspaces|sso)(\/|\?|$)/;

/** After such a call succeeds, the open live sockets' credentials are checked again. */
export function installCredentialChanges(app: FastifyInstance, registry: LiveRegistry): void {
  app.addHook('onResponse', async (request, reply) => {
    if (SAFE_METHODS.has(request.method) || reply.statusCode >= 400) return;
    if (registry.size === 0 || !CREDENTIAL_PATHS.test(request.url)) return;
    // Not awaited: the caller's answer is sent; the sockets close as soon as the check is done.
    void registry.recheck();
  });
}
