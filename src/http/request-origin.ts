import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors/app-error.js';
import { SAFE_METHODS } from './route-access.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route is posted to by another site's page by design (the SAML assertion consumer
     * service, posted by the identity provider): no Origin or Content-Type check.
     */
    crossSite?: boolean;
  }
}

export interface RequestOriginOptions {
  /** The host the server listens on (`127.0.0.1`, `0.0.0.0`, a name). */
  listenHost: string;
  /** Names from `http.allowed_hosts`, lower case. */
  allowedHosts: readonly string[];
  /** Origins besides the request's own that pages may send state-changing requests from (`auth.public_url`). */
  trustedOrigins: readonly string[];
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The host name of a Host header, lower case, without its port; IPv6 literals keep their brackets. */
function hostName(host: string): string {
  const lower = host.trim().toLowerCase();
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1);
  return lower.replace(/:\d*$/, '').replace(/\.$/, '');
}

/**
 * The Host names a request may carry. A name that is not the service's own is how DNS rebinding
 * looks: a page of another site whose name now points at this address. Address literals cannot
 * be rebound, so any is accepted; names must be loopback, the listen host, `auth.public_url`'s
 * host, or listed in `http.allowed_hosts`.
 */
function hostAllowed(host: string | undefined, options: RequestOriginOptions): boolean {
  if (!host) return false;
  const name = hostName(host);
  if (LOOPBACK_NAMES.has(name) || isIP(name.replace(/^\[|\]$/g, '')) !== 0) return true;
  if (name === options.listenHost.toLowerCase() || options.allowedHosts.includes(name)) return true;
  return options.trustedOrigins.some((origin) => originHost(origin) === name);
}

function originHost(origin: string): string | undefined {
  try {
    return hostName(new URL(origin).host);
  } catch {
    return undefined;
  }
}

export function originOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/** The service's own origin as this request reached it. */
function ownOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

/** Whether `origin` is the service's own or a trusted one. */
export function originTrusted(request: FastifyRequest, origin: string, trusted: readonly string[]): boolean {
  return origin === ownOrigin(request) || trusted.includes(origin);
}

/** Whether the request is a WebSocket handshake, which a page of any site may open. */
export function isUpgrade(request: FastifyRequest): boolean {
  return request.headers.upgrade?.toLowerCase() === 'websocket';
}

function isJson(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/json\s*(;|$)/i.test(contentType.trim());
}

/**
 * What a browser page of another site must not be able to make the service do, in every
 * authentication mode (mode `none` has no credentials to steal, so listening on loopback is its
 * only fence, and a page can reach loopback):
 * - a Host that is not the service's own is refused 421, against DNS rebinding;
 * - a state-changing call or a WebSocket handshake whose `Origin` is another site's is refused 403;
 * - a state-changing call must declare `Content-Type: application/json`, bodiless ones included,
 *   else 415: a page can send a cross-site form or no-cors fetch without a preflight only with
 *   other content types.
 * Requests without `Origin` (curl, the CLI) pass the Origin check.
 */
export function installRequestOriginChecks(app: FastifyInstance, options: RequestOriginOptions): void {
  // An empty body declared as JSON is no body, so bodiless calls can carry the content type.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') done(null, undefined);
    else parseJson(request, body as string, done);
  });

  app.addHook('onRequest', async (request) => {
    if (!hostAllowed(request.headers.host, options)) {
      throw new AppError(
        'MISDIRECTED_REQUEST',
        'the Host header names a host this service does not answer for: list it in http.allowed_hosts',
      );
    }
    // An unknown path or method answers 404 or 405 whatever it carries.
    if (request.is404 || request.routeOptions.config?.crossSite) return;
    const changing = !SAFE_METHODS.has(request.method);
    if (!changing && !isUpgrade(request)) return;
    const origin = request.headers.origin;
    if (origin !== undefined && !originTrusted(request, origin, options.trustedOrigins)) {
      throw new AppError(
        'FORBIDDEN',
        `requests from another site's page are refused: Origin ${JSON.stringify(origin).slice(0, 120)} is not this service`,
      );
    }
    if (changing && !isJson(request.headers['content-type'])) {
      throw new AppError(
        'UNSUPPORTED_MEDIA_TYPE',
        `${request.method} requests must send Content-Type: application/json, bodiless ones too`,
      );
    }
  });
}
