import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';

const NoQuery = Type.Object({}, { additionalProperties: false });

/**
 * Gives every route without a querystring schema one that takes no parameters, so that an
 * unknown query parameter is refused with 400 rather than silently ignored (a typo such as
 * `?forse=true` would otherwise do something else than asked). Install it before the routes.
 */
export function installStrictQuery(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (!route.schema?.querystring) route.schema = { ...route.schema, querystring: NoQuery };
  });
}
