import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors/app-error.js';

/**
 * The path (`body.email`, `query.action`) of the first string holding a NUL, if any. Walked with a
 * stack of its own: a body nested 100,000 deep is a client's error, not this process's stack.
 */
function nulAt(root: unknown, rootPath: string): string | undefined {
  const pending: [unknown, string][] = [[root, rootPath]];
  while (pending.length > 0) {
    const [value, path] = pending.pop() as [unknown, string];
    if (typeof value === 'string') {
      if (value.includes('\0')) return path;
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push([value[i], `${path}[${i}]`]);
    } else if (value && typeof value === 'object') {
      for (const [key, item] of Object.entries(value).reverse()) {
        pending.push([item, `${path}.${key}`], [key, `${path}.<key>`]);
      }
    }
  }
  return undefined;
}

/**
 * PostgreSQL refuses NUL in text, so a NUL anywhere in a path parameter, a query parameter or the
 * body would fail deep in a query as an internal error and lose the call's audit event. It is
 * refused before validation instead: 400 in the path, the query or an action's body, 422 in a
 * definition's body (as any other unacceptable value there; INVALID_DSN in a DSN, as any other
 * control character there).
 */
export function installNulGuard(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    const inRequest = nulAt(request.params, '') ?? nulAt(request.query, '');
    const inBody = inRequest === undefined ? nulAt(request.body, '') : undefined;
    const where = inRequest ?? inBody;
    if (where === undefined) return;
    // Named as the schema errors name fields: `source.connection`, `name`.
    const field = where.replace(/^\./, '') || 'body';
    const definition = inBody !== undefined && !request.routeOptions.config.actionBody;
    const code = !definition ? 'BAD_REQUEST' : /(^|\.)dsn$/.test(field) ? 'INVALID_DSN' : 'VALIDATION_FAILED';
    throw new AppError(code, `${field}: must not contain a NUL character (a control character)`, { field });
  });
}
