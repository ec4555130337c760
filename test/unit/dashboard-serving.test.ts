import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installDashboard } from '../../src/http/dashboard.js';
import { installErrorHandling } from '../../src/http/error-handler.js';

async function appServing(dir: string, authMode: 'none' | 'enabled' = 'none'): Promise<FastifyInstance> {
  const app = Fastify();
  installErrorHandling(app);
  await installDashboard(app, authMode, dir);
  return app;
}

describe('the dashboard at /app/', () => {
  let app: FastifyInstance;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dashboard-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>Replicator</title>');
    writeFileSync(join(dir, 'assets', 'index-3f9a1c.js'), 'console.log(1)');
    writeFileSync(join(dir, 'favicon.svg'), '<svg/>');
    writeFileSync(join(tmpdir(), 'outside.txt'), 'secret');
    app = await appServing(dir);
  });
  afterAll(() => app?.close());

  it('leads / and /app to /app/', async () => {
    expect((await app.inject('/')).headers.location).toBe('/app/');
    expect((await app.inject('/app')).headers.location).toBe('/app/');
  });

  it('serves the page revalidated every time, with a policy that allows only its own origin', async () => {
    const page = await app.inject('/app/');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<title>Replicator</title>');
    expect(page.headers['cache-control']).toBe('no-cache');
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
  });

  it('tells the page whether authentication is on, so that it asks for a session only then', async () => {
    expect((await app.inject('/app/')).body).toContain('<meta name="replicator-auth" content="none">');
    const dir = mkdtempSync(join(tmpdir(), 'dashboard-auth-'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><html><head><title>R</title></head></html>');
    const enabled = await appServing(dir, 'enabled');
    expect((await enabled.inject('/app/pipelines')).body).toContain(
      '<meta name="replicator-auth" content="enabled"></head>',
    );
    await enabled.close();
  });

  it('caches hashed assets for a year, immutable', async () => {
    const asset = await app.inject('/app/assets/index-3f9a1c.js');
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect((await app.inject('/app/favicon.svg')).headers['cache-control']).toBe('public, max-age=3600');
  });

  it('answers the page for any path the dashboard routes itself (deep links)', async () => {
    const deep = await app.inject('/app/pipelines/orders?tab=runs');
    expect(deep.statusCode).toBe(200);
    expect(deep.body).toContain('<title>Replicator</title>');
  });

  it('never serves a file outside its folder', async () => {
    for (const path of [
      '/app/../outside.txt',
      '/app/%2e%2e/outside.txt',
      '/app/assets/..%2f..%2foutside.txt',
    ]) {
      const res = await app.inject(path);
      expect(res.body, path).not.toContain('secret');
    }
  });

  it('says how to build it when it is not built', async () => {
    const bare = await appServing(mkdtempSync(join(tmpdir(), 'no-dashboard-')));
    const res = await bare.inject('/app/');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      error: 'the dashboard is not built: run `npm run build`, then restart',
      code: 'NOT_FOUND',
    });
    await bare.close();
  });
});
