import { once } from 'node:events';
import net from 'node:net';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { SYSTEM_CONTEXT } from '../../src/context.js';
import { clientErrorHandler } from '../../src/http/client-error.js';
import { LIVE_LIMITS } from '../../src/http/live-socket.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { HANG_MS, waitFor } from '../support/wait-for.js';

const cluster = inject('pgClusters')[0]!;

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Whether the server closed the connection after answering (waited for as long as a hang). */
  closed: boolean;
}

const HANDSHAKE = [
  'Connection: Upgrade',
  'Upgrade: websocket',
  'Sec-WebSocket-Version: 13',
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
];

/** Sends bytes no fetch would send and reads one HTTP response, however malformed the request. */
async function raw(base: string, head: string, extraHeaders: string[] = ['Connection: close']) {
  const { port } = new URL(base);
  const socket = net.connect(Number(port), '127.0.0.1');
  socket.write(`${head}\r\nHost: 127.0.0.1\r\n${extraHeaders.map((h) => `${h}\r\n`).join('')}\r\n`);
  let data = Buffer.alloc(0);
  let closed = false;
  socket.on('data', (chunk) => {
    data = Buffer.concat([data, chunk]);
  });
  socket.on('error', () => {});
  // Every request here ends with the server closing the connection, after the whole response.
  await waitFor(() => socket.closed, 'the server to answer and close', HANG_MS, 10).catch(() => undefined);
  closed = socket.closed;
  socket.destroy();
  const text = data.toString();
  const end = text.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [
      line.slice(0, line.indexOf(':')).toLowerCase(),
      line.slice(line.indexOf(':') + 1).trim(),
    ]),
  );
  return {
    status: Number(statusLine?.split(' ')[1]),
    headers,
    body: text.slice(end + 4),
    closed,
  } as RawResponse;
}

/** A WebSocket client on raw bytes: it can stop reading, and send a frame without holding it in memory. */
class RawLiveClient {
  readonly socket: net.Socket;
  private pending = Buffer.alloc(0);
  private handshaken = false;
  closeCode: number | undefined;
  received = 0;
  /** Resolves once the server sends its close frame, or the connection ends. */
  readonly ended: Promise<void>;
  private end: () => void = () => {};

  private constructor(socket: net.Socket) {
    this.socket = socket;
    this.ended = new Promise((resolve) => {
      this.end = resolve;
    });
    socket.on('error', () => {});
    socket.on('close', () => this.end());
    socket.on('data', (chunk) => this.read(chunk));
  }

  static async open(base: string): Promise<RawLiveClient> {
    const { port } = new URL(base);
    const client = new RawLiveClient(net.connect(Number(port), '127.0.0.1'));
    client.socket.write(`GET /v1/live HTTP/1.1\r\nHost: 127.0.0.1\r\n${HANDSHAKE.join('\r\n')}\r\n\r\n`);
    await waitFor(() => client.handshaken, 'the handshake', HANG_MS, 10);
    return client;
  }

  private read(chunk: Buffer) {
    this.pending = Buffer.concat([this.pending, chunk]);
    if (!this.handshaken) {
      const end = this.pending.indexOf('\r\n\r\n');
      if (end < 0) return;
      if (!this.pending.subarray(0, 12).toString().includes('101')) throw new Error('handshake refused');
      this.handshaken = true;
      this.pending = this.pending.subarray(end + 4);
    }
    // Server frames are unmasked: 2 header bytes, then a 16- or 64-bit length when announced.
    while (this.pending.length >= 2) {
      const opcode = this.pending[0]! & 0x0f;
      let length = this.pending[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.pending.length < 4) return;
        length = this.pending.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.pending.length < 10) return;
        length = Number(this.pending.readBigUInt64BE(2));
        offset = 10;
      }
      if (this.pending.length < offset + length) return;
      if (opcode === 0x8) {
        this.closeCode = this.pending.readUInt16BE(offset);
        this.end();
      }
      this.received += length;
      this.pending = this.pending.subarray(offset + length);
    }
  }

  /** Announces one binary frame of `announced` bytes and streams its payload until the server closes. */
  async streamFrame(announced: number, upTo: number): Promise<number> {
    const header = Buffer.alloc(14);
    header[0] = 0x82;
    header[1] = 0x80 | 127;
    header.writeBigUInt64BE(BigInt(announced), 2);
    // The mask key stays 0, so the one reused chunk is the payload as sent.
    this.socket.write(header);
    const chunk = Buffer.alloc(1024 * 1024);
    let sent = 0;
    while (sent < upTo && this.closeCode === undefined && !this.socket.destroyed) {
      sent += chunk.length;
      if (!this.socket.write(chunk)) await Promise.race([once(this.socket, 'drain'), this.ended]);
    }
    return sent;
  }
}

async function liveClient(url: string): Promise<WebSocket> {
  const socket = new WebSocket(`${url.replace('http', 'ws')}/v1/live`);
  await once(socket, 'open');
  return socket;
}

async function closeCodeOf(socket: WebSocket, timeoutMs = HANG_MS): Promise<number | 'open'> {
  if (socket.readyState === WebSocket.CLOSED) throw new Error('already closed');
  const closed = once(socket, 'close').then(([code]) => code as number);
  return Promise.race([closed, sleep(timeoutMs, 'open' as const, { ref: false })]);
}

describe('HTTP surface', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService(testConfig(await createDatabase(cluster.adminUrl, 'http_surface')));
  });
  afterAll(() => service?.stop());

  const openLiveSockets = () =>
    [...service.running.app.websocketServer.clients].filter((c) => c.readyState === WebSocket.OPEN).length;

  describe('the /v1/live WebSocket', () => {
    it('greets a client and relays what the hub publishes', async () => {
      const socket = new WebSocket(`${service.url.replace('http', 'ws')}/v1/live`);
      const messages: any[] = [];
      socket.on('message', (data) => messages.push(JSON.parse(String(data))));
      await once(socket, 'open');
      // Subscribed to the hub: the greeting has come.
      await waitFor(() => messages.length >= 1, 'the greeting', HANG_MS, 10);
      service.running.live.publish(SYSTEM_CONTEXT.projectId, {
        type: 'pipeline.state',
        name: 'p',
        state: 'running',
        error: null,
      });
      await waitFor(() => messages.length >= 2, 'the published message', HANG_MS, 10);
      expect(messages).toEqual([
        { type: 'hello', version: expect.any(String) },
        // Authentication is off: the feed holds every project's messages, each naming its project.
        {
          type: 'pipeline.state',
          name: 'p',
          project_id: SYSTEM_CONTEXT.projectId,
          state: 'running',
          error: null,
        },
      ]);
      socket.close();
      await once(socket, 'close');
    });

    it('closes a client that sends a frame over the size limit with 1009', async () => {
      const socket = await liveClient(service.url);
      socket.send(Buffer.alloc(1024 * 1024));
      expect(await closeCodeOf(socket)).toBe(1009);
    });

    it('reads no further than the header of an oversized frame, so memory does not grow', async () => {
      const client = await RawLiveClient.open(service.url);
      const before = process.memoryUsage().arrayBuffers;
      const sent = await client.streamFrame(96 * 1024 * 1024, 64 * 1024 * 1024);
      await Promise.race([client.ended, sleep(HANG_MS, undefined, { ref: false })]);
      const grown = process.memoryUsage().arrayBuffers - before;
      client.socket.destroy();
      expect(client.closeCode).toBe(1009);
      expect(sent).toBeLessThan(64 * 1024 * 1024);
      expect(grown).toBeLessThan(16 * 1024 * 1024);
    });

    it(`closes a client that sends more than ${LIVE_LIMITS.inboundMessages} messages in a window with 1008`, async () => {
      const socket = await liveClient(service.url);
      for (let i = 0; i < LIVE_LIMITS.inboundMessages - 1; i++) socket.send('ping');
      // The last one allowed is a ping: its pong says the server has read them all, and kept the socket.
      socket.ping();
      await once(socket, 'pong');
      expect(socket.readyState).toBe(WebSocket.OPEN);
      socket.send('one too many');
      expect(await closeCodeOf(socket)).toBe(1008);
    });

    it('drops a client that does not read once its send buffer passes the bound', async () => {
      const client = await RawLiveClient.open(service.url);
      // The server has taken the socket on: its greeting has come.
      await waitFor(() => client.received > 0, 'the greeting', HANG_MS, 10);
      client.socket.pause();
      expect(openLiveSockets()).toBe(1);
      const error = 'x'.repeat(256 * 1024);
      // 100 MiB at most: far more than the kernel's socket buffers and the bound together.
      for (let i = 0; i < 400 && openLiveSockets() > 0; i++) {
        service.running.live.publish(SYSTEM_CONTEXT.projectId, {
          type: 'pipeline.state',
          name: `p${i}`,
          state: 'failed',
          error,
        });
        // The socket's writes go on between publications (the buffer only grows as the kernel's fill).
        if (i % 8 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      expect(openLiveSockets()).toBe(0);
      expect(service.running.live.watched(SYSTEM_CONTEXT.projectId)).toBe(false);
      client.socket.resume();
      await Promise.race([client.ended, sleep(HANG_MS, undefined, { ref: false })]);
      client.socket.destroy();
      expect(client.closeCode).toBe(1013);
    });

    it('answers a plain GET with 426 UPGRADE_REQUIRED', async () => {
      const res = await fetch(`${service.url}/v1/live`);
      expect(res.status).toBe(426);
      expect(res.headers.get('upgrade')).toBe('websocket');
      expect(await res.json()).toMatchObject({ code: 'UPGRADE_REQUIRED', error: expect.any(String) });
      expect((await fetch(`${service.url}/v1/live`, { method: 'HEAD' })).status).toBe(426);
    });

    it('refuses a bad handshake with a JSON error', async () => {
      const res = await raw(service.url, 'GET /v1/live HTTP/1.1', [
        ...HANDSHAKE.filter((h) => !h.startsWith('Sec-WebSocket-Version')),
        'Sec-WebSocket-Version: 7',
      ]);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toContain('application/json');
      expect(res.headers['sec-websocket-version']).toBe('13, 8');
      expect(JSON.parse(res.body)).toMatchObject({
        code: 'BAD_REQUEST',
        error: expect.stringContaining('Version'),
      });
      expect(res.closed).toBe(true);
    });

    it.each([
      ['an unknown path', '/v1/nowhere', 404, 'NOT_FOUND'],
      ['a route that is not a WebSocket', '/v1/health', 400, 'BAD_REQUEST'],
      ['a malformed URL', '/v1/%', 400, 'BAD_REQUEST'],
    ])('refuses an upgrade to %s with a JSON error, and closes', async (_what, path, status, code) => {
      const res = await raw(service.url, `GET ${path} HTTP/1.1`, HANDSHAKE);
      expect(res.status).toBe(status);
      expect(JSON.parse(res.body)).toMatchObject({ code, error: expect.any(String) });
      expect(res.closed).toBe(true);
    });
  });

  describe('error bodies', () => {
    it('answers headers over 16 KiB with 431 HEADERS_TOO_LARGE', async () => {
      const res = await raw(service.url, 'GET /v1/health HTTP/1.1', [`X-Big: ${'a'.repeat(20 * 1024)}`]);
      expect(res.status).toBe(431);
      expect(res.headers['content-type']).toContain('application/json');
      expect(JSON.parse(res.body)).toMatchObject({ code: 'HEADERS_TOO_LARGE', error: expect.any(String) });
    });

    it('answers a request the HTTP parser refuses with 400 BAD_REQUEST', async () => {
      const res = await raw(service.url, 'GET /v1/health HTTP/1.1', ['Content-Length: abc']);
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ code: 'BAD_REQUEST', error: expect.any(String) });
    });

    it('answers a request that timed out with 408 REQUEST_TIMEOUT', async () => {
      const socket = new PassThrough();
      let written = '';
      socket.on('data', (chunk) => {
        written += chunk;
      });
      const timeout = Object.assign(new Error('timed out'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
      clientErrorHandler.call(service.running.app, timeout, socket as unknown as net.Socket);
      await waitFor(() => socket.destroyed && written.includes('\r\n\r\n'), 'the answer', HANG_MS, 10);
      expect(written).toMatch(/^HTTP\/1\.1 408 /);
      expect(JSON.parse(written.slice(written.indexOf('\r\n\r\n') + 4))).toMatchObject({
        code: 'REQUEST_TIMEOUT',
      });
      expect(socket.destroyed).toBe(true);
    });

    it.each(['/v1/pipelines/%E0%A4%A', '/v1/%', '/v1/connections/%zz/x'])(
      'answers the malformed URL %s with 400 BAD_REQUEST',
      async (path) => {
        const res = await raw(service.url, `GET ${path} HTTP/1.1`);
        expect(res.status).toBe(400);
        expect(res.headers['x-request-id']).toBeTruthy();
        expect(JSON.parse(res.body)).toMatchObject({ code: 'BAD_REQUEST', error: expect.any(String) });
      },
    );

    it('answers a name longer than any name can be with 404 NOT_FOUND', async () => {
      const res = await service.request('GET', `/v1/pipelines/${'a'.repeat(150)}`);
      expect(res).toMatchObject({ status: 404, body: { code: 'NOT_FOUND', error: expect.any(String) } });
    });

    it.each([
      ['GET', '/v1/nothing'],
      ['PATCH', '/v1/nothing/here'],
      ['GET', '/v2/pipelines'],
      ['GET', '/v1/pipelines/x/nothing'],
    ])('answers %s %s with 404 NOT_FOUND', async (method, path) => {
      const res = await service.request(method, path);
      expect(res).toMatchObject({ status: 404, body: { code: 'NOT_FOUND', error: expect.any(String) } });
    });

    it.each([
      ['PATCH', '/v1/pipelines/x', 'GET, HEAD, PUT, DELETE'],
      ['DELETE', '/v1/pipelines', 'GET, HEAD, POST'],
      ['POST', '/v1/health', 'GET, HEAD'],
      ['GET', '/v1/pipelines/x/state', 'PUT'],
      ['OPTIONS', '/v1/connections/c', 'GET, HEAD, PUT, DELETE'],
    ])('answers %s %s with 405 METHOD_NOT_ALLOWED and Allow: %s', async (method, path, allow) => {
      const res = await fetch(`${service.url}${path}`, { method });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe(allow);
      expect(await res.json()).toMatchObject({ code: 'METHOD_NOT_ALLOWED', error: expect.any(String) });
    });
  });

  describe('names in paths', () => {
    it.each([
      ['GET', '/v1/pipelines/a%00b'],
      ['DELETE', '/v1/pipelines/a%00b'],
      ['GET', '/v1/connections/a%00b'],
      ['DELETE', '/v1/connections/a%1Fb'],
      ['GET', '/v1/pipelines/a%7Fb/progress'],
      ['GET', '/v1/pipelines/%0A/runs'],
    ])('refuses a control character in %s %s with 400 BAD_REQUEST', async (method, path) => {
      const res = await service.request(method, path);
      expect(res).toMatchObject({
        status: 400,
        body: { code: 'BAD_REQUEST', error: expect.stringContaining('name') },
      });
    });

    it('refuses a control character in a name with a body too', async () => {
      const res = await service.request('PUT', '/v1/pipelines/a%00b/state', { state: 'start' });
      expect(res).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
    });

    it.each([
      ['source', { connection: 'c\u0000', tables: ['public.t'] }],
      ['sink', { connection: 'c\u0000' }],
    ])('refuses a control character in %s.connection with 422, not 500', async (side, ref) => {
      await service.request('POST', '/v1/connections', {
        name: 'c',
        type: 'postgres',
        dsn: 'postgres://u@127.0.0.1:1/db',
      });
      const other =
        side === 'source'
          ? { sink: { connection: 'c' } }
          : { source: { connection: 'c', tables: ['public.t'] } };
      const res = await service.request('POST', '/v1/pipelines', { name: 'nul-ref', ...other, [side]: ref });
      expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
      expect(res.body.error).toMatch(new RegExp(`^${side}\\.connection: `));
    });

    it.each(['/v1/pipelines/no-such', '/v1/pipelines/bad%20name!', '/v1/connections/%C3%A9t%C3%A9'])(
      'still answers a name that names nothing, %s, with 404 NOT_FOUND',
      async (path) => {
        const res = await service.request('GET', path);
        expect(res).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
      },
    );
  });

  describe('query parameters', () => {
    it.each([
      ['GET', '/v1/pipelines?verbose=1', 'verbose'],
      ['GET', '/v1/connections/c?x=1', 'x'],
      ['GET', '/v1/health?probe=deep', 'probe'],
      ['POST', '/v1/connections?dry_run=true', 'dry_run'],
      ['GET', '/v1/pipelines/x/runs?limit=5&bogus=1', 'bogus'],
      ['DELETE', '/v1/pipelines/x?force=true&cascade=1', 'cascade'],
      ['GET', '/metrics?name[]=up', 'name[]'],
    ])('refuses %s %s with 400 BAD_REQUEST naming %s', async (method, path, parameter) => {
      const body = method === 'POST' ? { name: 'dry', type: 'postgres', dsn: 'postgres://h/db' } : undefined;
      const res = await service.request(method, path, body);
      expect(res).toMatchObject({ status: 400, body: { code: 'BAD_REQUEST' } });
      expect(res.body.error).toContain(parameter);
    });

    it('still takes the known ones, and did nothing for a refused one', async () => {
      expect((await service.request('GET', '/v1/connections/dry')).status).toBe(404);
      expect((await service.request('DELETE', '/v1/pipelines/missing?force=true')).status).toBe(404);
      expect((await service.request('GET', '/v1/pipelines')).status).toBe(200);
    });
  });

  it('keeps the OpenAPI document whole, with /v1/live and no stray query parameters', async () => {
    const doc = (await service.request('GET', '/v1/openapi.json')).body;
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.paths['/v1/live'].get.responses['426']).toBeDefined();
    for (const [path, operations] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        expect(Object.keys(operation.responses ?? {}).length, `${method} ${path}`).toBeGreaterThan(0);
        for (const parameter of operation.parameters ?? []) {
          expect(['path', 'query', 'header'], `${method} ${path}`).toContain(parameter.in);
          expect(parameter.name, `${method} ${path}`).toBeTruthy();
        }
      }
    }
    const pipelineQuery = (doc.paths['/v1/pipelines/{name}'].get.parameters ?? []).filter(
      (p: { in: string }) => p.in === 'query',
    );
    expect(pipelineQuery).toEqual([]);
  });
});
