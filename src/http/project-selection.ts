import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DatabasePool } from 'slonik';
import { SYSTEM_CONTEXT } from '../context.js';
import { AppError, notFound } from '../errors/app-error.js';
import { projectNamed, projectsHolding } from '../tenancy/name-holders.js';
import type { AuthMode } from './auth-guard.js';

/** The header that chooses the project while authentication is off (a name or an id). */
const PROJECT_HEADER = 'replicator-project';

/** Routes that name a pipeline or a connection in their path, and which of the two. */
const NAMED_ROUTE = /^\/v1\/(pipelines|connections)\/:name(\/|$)/;

/**
 * Chooses the project each request acts in, after the authentication guard. With authentication on,
 * the session or token did (a header cannot override it). With it off, project filtering is off:
 * lists show every project, a name in a path is looked up in every project (several holding it is
 * a 409 naming them), and creates go to the default project; the header narrows all of that to
 * one project. Runs before the handler, after validation, so the path's name is well-formed.
 */
export function installProjectSelection(app: FastifyInstance, mode: AuthMode, pool: DatabasePool): void {
  app.addHook('preHandler', async (request) => {
    if (!request.url.startsWith('/v1/')) return;
    const chosen = headerOf(request);
    if (mode === 'enabled') {
      if (chosen !== undefined) {
        throw new AppError(
          'BAD_REQUEST',
          `${PROJECT_HEADER}: the active project is the session's or the token's; switch it with PUT /v1/auth/session`,
        );
      }
      return;
    }
    if (chosen !== undefined) {
      const projectId = await projectNamed(pool, chosen);
      if (!projectId) throw notFound('project', chosen);
      request.ctx = { ...SYSTEM_CONTEXT, projectId };
      return;
    }
    const named = NAMED_ROUTE.exec(request.routeOptions.url ?? '');
    const name = (request.params as { name?: string } | undefined)?.name;
    if (!named || name === undefined) {
      request.ctx = { ...SYSTEM_CONTEXT, allProjects: true };
      return;
    }
    const kind = named[1] === 'pipelines' ? 'pipeline' : 'connection';
    const holders = await projectsHolding(pool, kind, name);
    if (holders.length > 1) {
      throw new AppError(
        'NAME_AMBIGUOUS',
        `${kind} '${name}' exists in the projects ${holders.map((p) => `'${p.name}'`).join(', ')}: ` +
          `choose one with the ${PROJECT_HEADER} header (its name or id)`,
      );
    }
    // No holder: the default project, where a lookup answers 404 and a write creates.
    request.ctx = { ...SYSTEM_CONTEXT, projectId: holders[0]?.id ?? SYSTEM_CONTEXT.projectId };
  });
}

function headerOf(request: FastifyRequest): string | undefined {
  const value = request.headers[PROJECT_HEADER];
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined || text.trim() === '' ? undefined : text.trim();
}
