import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors/app-error.js';

/** The path (`body.email`, `query.action`) of the first string holding a NUL, if any. */
function nulAt(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\0') ? path : undefined;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = nulAt(item, `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const found = nulAt(key, `${path}.<key>`) ?? nulAt(item, `${path}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * PostgreSQL refuses NUL in text, so a NUL anywhere in a path parameter, a query parameter or the
 * body would fail deep in a query as an internal error and lose the call's audit event. It is
 * refused before validation instead: 400 in the path, the query or an action's body, 422 in a
 * definition's body (as any other unacceptable value there).
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
    throw new AppError(
      definition ? 'VALIDATION_FAILED' : 'BAD_REQUEST',
      `${field}: must not contain a NUL character`,
      { field },
    );
  });
}
