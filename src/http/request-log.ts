import type { FastifyInstance } from 'fastify';
import { RefusalThrottle, type RefusalThrottleOptions } from '../audit/refusal-throttle.js';

/** Longer request targets are cut in the log: a caller chooses them. */
const MAX_LOGGED_URL_CHARS = 512;

/**
 * One log line per request, written when it is answered: at debug for a read answered below 400,
 * at info for a write or a refusal (Fastify's own two lines a request are
 * turned off in app.ts). A refused request of a caller who is nobody (anyone can send as many as
 * they like) is logged up to a rate per address and route, the rest counted into one line per
 * window: a flood of anonymous calls costs a bounded number of lines, whatever its rate.
 */
export function installRequestLog(
  app: FastifyInstance,
  throttleOptions: Partial<RefusalThrottleOptions> = {},
) {
  const throttle = new RefusalThrottle(
    (s) =>
      app.log.warn(
        {
          remoteAddress: s.address,
          route: s.kind,
          suppressed: s.suppressed,
          windowSeconds: s.windowMs / 1000,
        },
        'refused requests of anonymous callers left out of the log',
      ),
    throttleOptions,
  );
  app.addHook('onResponse', async (request, reply) => {
    const status = reply.statusCode;
    // Set by the auth guard; absent for a request refused before it (a foreign Host).
    const anonymous = !(request as { ctx?: { principal?: unknown } }).ctx?.principal;
    const route = request.routeOptions.url ?? 'unmatched';
    if (status >= 400 && status < 500 && anonymous && !throttle.admit(request.ip, route)) return;
    const url =
      request.url.length > MAX_LOGGED_URL_CHARS
        ? `${request.url.slice(0, MAX_LOGGED_URL_CHARS)}…[truncated]`
        : request.url;
    // A read that succeeded is the dashboard's polling, most of the time: there for debugging only.
    const read = request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS';
    const level = read && status < 400 ? 'debug' : 'info';
    request.log[level](
      {
        req: { method: request.method, url, remoteAddress: request.ip },
        res: { statusCode: status },
        responseTime: reply.elapsedTime,
      },
      'request completed',
    );
  });
}
