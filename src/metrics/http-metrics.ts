import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { HttpMetrics } from './metrics-registry.js';

/** The `route` label of every request that matched no route, so that stray URLs make one series. */
export const UNMATCHED_ROUTE = 'unmatched';

/** The `route` label of a request: the pattern of the route it matched, e.g. `/v1/pipelines/:name`. */
function routeLabel(request: FastifyRequest): string {
  const pattern = request.routeOptions.url;
  return request.is404 || !pattern ? UNMATCHED_ROUTE : pattern;
}

/**
 * Counts and times every answered request, `/metrics` scrapes included (their rate shows whether
 * Prometheus reaches the instance). Install it before the routes are registered.
 */
export function installHttpMetrics(app: FastifyInstance, metrics: HttpMetrics): void {
  app.addHook('onResponse', async (request, reply) => {
    const labels = { method: request.method, route: routeLabel(request), status: String(reply.statusCode) };
    metrics.requests.inc(labels);
    metrics.durationSeconds.observe(labels, reply.elapsedTime / 1000);
  });
}
