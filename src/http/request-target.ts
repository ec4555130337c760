import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors/app-error.js';

const FOREIGN = Symbol('foreign request target');

type TargetedMessage = IncomingMessage & { [FOREIGN]?: string };

/**
 * Fastify's `rewriteUrl`: a request target in absolute form (`PUT http://host/v1/...`, RFC 9112
 * 3.2.2) becomes the origin form (`/v1/...`) before routing, so that every check keyed on the path
 * (audit, route access, not-found, metrics) sees what the router sees. A target naming another
 * authority than the request's Host is kept aside and refused by `installRequestTargetCheck`.
 */
export function originForm(req: IncomingMessage): string {
  const url = req.url ?? '/';
  if (url.startsWith('/')) return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    (req as TargetedMessage)[FOREIGN] = 'is not a valid request target';
    return '/';
  }
  const host = req.headers.host?.toLowerCase();
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.host !== host) {
    (req as TargetedMessage)[FOREIGN] = 'names another host than the Host header';
  }
  return `${parsed.pathname}${parsed.search}`;
}

/** Refuses, with 400, a request whose absolute-form target named an authority that is not ours. */
export function installRequestTargetCheck(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const reason = (request.raw as TargetedMessage)[FOREIGN];
    if (reason !== undefined) {
      throw new AppError('BAD_REQUEST', `the request target ${reason}; send the path alone`);
    }
  });
}
