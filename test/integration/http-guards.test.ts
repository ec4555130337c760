import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectionBudget, openFileLimit } from '../../src/http/connection-limits.js';
import { openLive } from '../support/live-client.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { HANG_MS, waitFor } from '../support/wait-for.js';

const cluster = inject('pgClusters')[0] as { adminUrl: string };

/** One request with headers fetch would not let a test set (Host); resolves with status and body. */
function request(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; body: any }> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk) => {
        text += chunk;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A client that sends a login request's headers and then never the whole body, from `localAddress`.
 * `refused` is whether the server closed it before answering anything.
 */
async function slowLogin(base: string, localAddress: string) {
  const { port } = new URL(base);
  const socket = net.connect({ port: Number(port), host: '127.0.0.1', localAddress });
  let received = '';
  socket.on('data', (chunk) => {
    received += chunk;
  });
  socket.on('error', () => {});
  const closed = once(socket, 'close').then(() => received);
  await once(socket, 'connect');
  socket.write(
    'POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
      'Content-Length: 1000\r\n\r\n{"email":',
  );
  return { socket, closed };
}

describe('HTTP guards: Host, Origin and Content-Type in mode none', () => {
  let service: TestService;

  beforeAll(async () => {
    const config = testConfig(await createDatabase(cluster.adminUrl, 'http_guards'));
    service = await startTestService({
      ...config,
      http: { ...config.http, allowedHosts: ['replicator.example.com'], liveSocketsPerAddress: 3 },
    });
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('answers only for its own names: a rebound foreign Host is refused 421', async () => {
    const { port } = new URL(service.url);
    const foreign = await request(service.url, 'GET', '/v1/pipelines', { host: `evil.example:${port}` });
    expect(foreign.status).toBe(421);
    expect(foreign.body.code).toBe('MISDIRECTED_REQUEST');
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      'replicator.example.com',
      `[::1]:${port}`,
    ]) {
      expect((await request(service.url, 'GET', '/v1/pipelines', { host })).status, host).toBe(200);
    }
  });

  it("refuses another site's page: a bodiless no-cors POST, a foreign Origin, a form", async () => {
    const host = new URL(service.url).host;
    const approve = '/v1/pipelines/nope/schema/approve';
    // What a no-cors fetch or a form can send without a preflight.
    const bare = await request(service.url, 'POST', approve, { host });
    expect(bare.status).toBe(415);
    expect(bare.body.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const form = await request(service.url, 'POST', approve, { host, 'content-type': 'text/plain' }, '{}');
    expect(form.status).toBe(415);
    const foreign = await request(service.url, 'POST', approve, {
      host,
      origin: 'https://evil.example',
      'content-type': 'application/json',
    });
    expect(foreign.status).toBe(403);
    expect(foreign.body.code).toBe('FORBIDDEN');
    // A bodiless call that declares JSON, with no Origin (curl, the CLI) or its own: it reaches the route.
    for (const origin of [undefined, service.url]) {
      const ok = await request(service.url, 'POST', approve, {
        host,
        'content-type': 'application/json',
        ...(origin ? { origin } : {}),
      });
      expect(ok.status, String(origin)).toBe(404);
      expect(ok.body.code).toBe('NOT_FOUND');
    }
    const deleted = await request(service.url, 'DELETE', '/v1/connections/nope', { host });
    expect(deleted.status).toBe(415);
  });

  it('refuses a WebSocket handshake from a foreign Origin', async () => {
    const foreign = await openLive(service.url, { origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    const own = await openLive(service.url, { origin: service.url });
    expect(own.socket).toBeDefined();
    own.socket?.close();
    await own.closed;
  });

  it('caps the live sockets of one address', async () => {
    const open = [];
    for (let i = 0; i < 3; i++) open.push(await openLive(service.url));
    expect(open.every((o) => o.socket)).toBe(true);
    const fourth = await openLive(service.url);
    expect(fourth.status).toBe(429);
    expect(JSON.parse(fourth.body as string).code).toBe('TOO_MANY_SOCKETS');
    open[0]?.socket?.close();
    await open[0]?.closed;
    // The server sees the close a moment after the client: asked again until the place is free.
    const again = await waitFor(
      async () => {
        const opening = await openLive(service.url);
        return opening.status === 429 ? undefined : opening;
      },
      'a live socket once one was closed',
      HANG_MS,
      20,
    );
    expect(again.socket).toBeDefined();
    for (const o of [...open.slice(1), again]) {
      o.socket?.close();
      await o.closed;
    }
  });
});

describe('HTTP guards: connection limits', () => {
  let service: TestService;

  beforeAll(async () => {
    const config = testConfig(await createDatabase(cluster.adminUrl, 'http_limits'));
    service = await startTestService({
      ...config,
      http: {
        ...config.http,
        maxConnections: 8,
        maxConnectionsPerAddress: 5,
        headersTimeoutMs: 1_000,
        requestTimeoutMs: 2_000,
      },
    });
  });
  afterAll(async () => {
    await service?.stop();
  });

  /** Waits until the server holds `n` connections (a closed one is counted out a moment later). */
  async function connectionsDownTo(n: number) {
    const server = service.running.app.server;
    const count = () => new Promise<number>((resolve) => server.getConnections((_e, c) => resolve(c)));
    while ((await count()) !== n) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  it('derives the connection budget from the open-file limit, keeping half for the data plane', () => {
    expect(openFileLimit('Max open files            4096                 524288               files\n')).toBe(
      4096,
    );
    expect(openFileLimit('Max cpu time unlimited\n')).toBeUndefined();
    expect(connectionBudget('auto', 4096)).toBe(2048);
    expect(connectionBudget(300, 4096)).toBe(300);
  });

  it('bounds slow-body sockets per address and in all, answers others, and times the slow ones out', async () => {
    const slow = [];
    for (let i = 0; i < 5; i++) slow.push(await slowLogin(service.url, '127.0.0.2'));
    // One address over its cap: closed before anything is answered.
    const overAddress = await slowLogin(service.url, '127.0.0.2');
    expect(await overAddress.closed).toBe('');
    // Another address is still answered (on a connection closed after the answer).
    const host = new URL(service.url).host;
    expect((await request(service.url, 'GET', '/v1/pipelines', { host })).status).toBe(200);
    await connectionsDownTo(5);

    for (let i = 0; i < 3; i++) slow.push(await slowLogin(service.url, '127.0.0.3'));
    await connectionsDownTo(8);
    const overAll = await slowLogin(service.url, '127.0.0.4');
    expect(await overAll.closed).toBe('');

    // The body never arrives in time: each slow socket is answered 408 and closed, so they hold
    // nothing for long.
    const answers = await Promise.all(slow.map((s) => s.closed));
    for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect((await service.request('GET', '/v1/pipelines')).status).toBe(200);
  });
});
