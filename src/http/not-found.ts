import type { FastifyInstance } from 'fastify';
import type { ErrorCode } from '../errors/codes.js';

/** The methods an `Allow` header may list, in the order it lists them. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

/** Whether a route pattern (`/v1/pipelines/:name`) matches a request path, segment by segment. */
function matches(pattern: string[], path: string[]): boolean {
  if (pattern.at(-1) === '*') return pattern.slice(0, -1).every((part, i) => part === path[i]);
  return (
    pattern.length === path.length &&
    pattern.every((part, i) => (part.startsWith(':') ? path[i] !== '' : part === path[i]))
  );
}

/**
 * Answers a request no route takes: 405 with `Allow` when the path has routes for other methods,
 * else 404. Fastify's router only finds routes by pattern, so the patterns are kept here as
 * routes are added: install it before the routes.
 */
export function installNotFoundHandling(app: FastifyInstance): void {
  const routes: { method: string; pattern: string[] }[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, pattern: route.url.split('/') });
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const segments = path.split('/');
    const allowed = METHODS.filter((method) =>
      routes.some((route) => route.method === method && matches(route.pattern, segments)),
    );
    if (allowed.length === 0) {
      reply
        .status(404)
        .send({ error: `no route ${request.method} ${path}`, code: 'NOT_FOUND' satisfies ErrorCode });
      return;
    }
    reply
      .status(405)
      .header('allow', allowed.join(', '))
      .send({
        error: `${request.method} is not allowed on ${path}; it takes ${allowed.join(', ')}`,
        code: 'METHOD_NOT_ALLOWED' satisfies ErrorCode,
      });
  });
}
