import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../errors/app-error.js';
import { packageRoot } from '../paths.js';
import './route-access.js';

// The page reads its own query string (if any); the service does not judge it.
const AnyQuery = Type.Object({}, { additionalProperties: true });

/** Where `npm run build` puts the dashboard. */
export const DASHBOARD_DIR = join(packageRoot, 'dist', 'ui');

// Everything the page needs comes from this service: no CDN, no font host, no framing by others.
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');

function secureHeaders(reply: FastifyReply): void {
  reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'same-origin');
}

/**
 * Serves the dashboard at `/app/`: files Vite names by content hash are cached for a year, the
 * page itself is revalidated every time (so a new build is seen at once), and any other path under
 * `/app/` is the page (the dashboard routes in the browser). `/` leads to it. The files hold no
 * data, so they need no credentials: everything shown comes from `/v1/` calls, which do.
 */
export async function installDashboard(
  app: FastifyInstance,
  authMode: 'none' | 'enabled',
  dir = DASHBOARD_DIR,
): Promise<void> {
  const built = existsSync(join(dir, 'index.html'));
  const config = { permission: 'public' as const };
  const schema = { hide: true, querystring: AnyQuery };
  app.get('/', { config, schema: { hide: true } }, (_request, reply) => reply.redirect('/app/', 302));
  app.get('/app', { config, schema: { hide: true } }, (_request, reply) => reply.redirect('/app/', 301));
  if (!built) {
    app.get('/app/*', { config, schema }, () => {
      throw new AppError('NOT_FOUND', 'the dashboard is not built: run `npm run build`, then restart');
    });
    return;
  }
  await app.register(fastifyStatic, { root: dir, serve: false, decorateReply: true });
  app.get('/app/*', { config, schema }, async (request, reply) => {
    const path = (request.params as { '*': string })['*'];
    secureHeaders(reply);
    if (path.startsWith('assets/') && existsSync(join(dir, path)) && !path.includes('..')) {
      return reply.sendFile(path, dir, { maxAge: '365d', immutable: true });
    }
    if (path !== '' && path !== 'index.html' && !path.includes('..') && existsSync(join(dir, path))) {
      return reply.sendFile(path, dir, { maxAge: '1h' });
    }
    reply.header('cache-control', 'no-cache');
    return reply.type('text/html; charset=utf-8').send(await pageFor(dir, authMode));
  });
}

/**
 * The page, telling the dashboard whether authentication is on: with it off there is no session
 * to ask for (the API answers 409 AUTH_DISABLED, which a browser logs as an error on every load).
 * Read at each request, so that a new build is served at once.
 */
async function pageFor(dir: string, authMode: 'none' | 'enabled'): Promise<string> {
  const page = await readFile(join(dir, 'index.html'), 'utf8');
  const meta = `<meta name="replicator-auth" content="${authMode}">`;
  return page.includes('</head>') ? page.replace('</head>', `${meta}</head>`) : `${meta}${page}`;
}
