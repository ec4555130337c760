import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import type { ChangeEvent, Row } from '../../src/core/change.js';
import type { Sink, SinkStateStore } from '../../src/core/sink.js';
import { isUnreachable } from '../../src/runtime/error-kinds.js';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import type { WebhookError } from '../../src/sinks/webhook/delivery-errors.js';
import {
  type WebhookSettings,
  webhookConnectionType,
} from '../../src/sinks/webhook/webhook-connection-type.js';
import { createWebhookSink } from '../../src/sinks/webhook/webhook-sink.js';
import { memorySinkState } from '../support/memory-sink-state.js';
import { col, tableOf } from '../support/table-schemas.js';
import { makeTestCertificates, type TestCertificates } from '../support/tls-certs.js';

const SECRET = `whsec-${randomUUID()}`;
const PRIVATE = { ...NO_LOCAL_ACCESS, webhookAllowPrivate: true };

const orders = tableOf(
  [col('id', 'integer', { isKey: true }), col('total', 'numeric(10,2)'), col('note', 'text')],
  ['id'],
  { schema: 'public', table: 'orders' },
);
const copyText = (rows: Row[]) =>
  Readable.from([rows.map((r) => `${orders.columns.map((c) => r[c.name] ?? '\\N').join('\t')}\n`).join('')]);
const orderRows = (from: number, to: number): Row[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({
    id: String(from + i),
    total: `${from + i}.50`,
    note: 'n',
  }));

const tx = (n: number) => ({
  commitLsn: BigInt(n) * 0x1000n,
  lsnText: `0/${n.toString(16).toUpperCase()}000`,
  end: BigInt(n) * 0x1000n + 0x10n,
  xid: 1000 + n,
  commitTime: `2024-05-01T12:00:${String(n % 60).padStart(2, '0')}Z`,
});
type Tx = ReturnType<typeof tx>;
const ev = (t: Tx, c: Partial<ChangeEvent> & Pick<ChangeEvent, 'op'>): ChangeEvent => ({
  table: orders,
  commitLsn: t.commitLsn,
  xid: t.xid,
  commitTime: t.commitTime,
  ...c,
});

/** A receiver's signature check, as docs/sinks/webhook.md shows it. */
function verified(header: string | undefined, body: string): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? '');
  if (!match) return false;
  const [, t, v1] = match as unknown as [string, string, string];
  if (Math.abs(Date.now() / 1000 - Number(t)) > 300) return false;
  const expected = createHmac('sha256', SECRET).update(`${t}.${body}`).digest();
  return timingSafeEqual(Buffer.from(v1, 'hex'), expected);
}

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  events: ChangeEnvelope[];
}
type Answer = (req: IncomingMessage, res: ServerResponse) => void;
const status =
  (code: number, headers: Record<string, string> = {}, body = ''): Answer =>
  (_req, res) => {
    res.writeHead(code, headers).end(body);
  };

/** A local receiver that records every request and answers from a queue (then 200). */
class Receiver {
  readonly requests: Received[] = [];
  readonly answers: Answer[] = [];
  private constructor(readonly server: Server) {
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        this.requests.push({ headers: req.headers, body, events: JSON.parse(body).events });
        (this.answers.shift() ?? status(200))(req, res);
      });
    });
  }
  static async start(server: Server): Promise<Receiver> {
    const receiver = new Receiver(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }
  get events(): ChangeEnvelope[] {
    return this.requests.flatMap((r) => r.events);
  }
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

describe('webhook sink, through the sink contract', () => {
  let receiver: Receiver;
  let certs: TestCertificates;
  const opened: Sink[] = [];
  const servers: Receiver[] = [];

  beforeAll(async () => {
    receiver = await Receiver.start(createHttpServer());
    certs = makeTestCertificates('webhook-client');
  });
  afterEach(async () => {
    for (const sink of opened.splice(0)) await sink.close();
    receiver.requests.length = 0;
    receiver.answers.length = 0;
  });
  afterAll(async () => {
    await receiver.close();
    for (const server of servers) await server.close();
    rmSync(certs.dir, { recursive: true, force: true });
  });

  async function open(
    properties: Record<string, string> = {},
    options: { url?: string; settings?: WebhookSettings; state?: SinkStateStore } = {},
  ) {
    const state = options.state ?? memorySinkState();
    const url = options.url ?? `http://127.0.0.1:${receiver.port}/hook?token=abc`;
    const dsn = webhookConnectionType.checkDsn(url, PRIVATE);
    const settings =
      options.settings ??
      (await webhookConnectionType.settings(dsn.publicDsn, { password: SECRET, tls: {} }, PRIVATE));
    const pipelineId = randomUUID();
    const sink = createWebhookSink({ pipelineId, connection: settings, properties, state });
    opened.push(sink);
    await sink.open([orders]);
    return { sink, state, pipelineId };
  }

  const failure = async (promise: Promise<unknown>): Promise<WebhookError> => {
    try {
      await promise;
    } catch (error) {
      return error as WebhookError;
    }
    throw new Error('it did not fail');
  };

  it('posts snapshot partitions in bounded requests, then marks them done', async () => {
    const { sink, state } = await open({ batch_max_events: '40' });
    expect(await sink.readCheckpoint()).toBeNull();
    expect(
      await sink.writeSnapshotPartition(
        orders,
        { table: orders, partitionId: '0' },
        copyText(orderRows(1, 100)),
      ),
    ).toBe(100);
    expect(receiver.requests.map((r) => r.events.length)).toEqual([40, 40, 20]);
    expect(receiver.events[6]).toEqual({
      id: 'snapshot/public/orders/["7"]',
      op: 'read',
      table: 'public.orders',
      key: { id: 7 },
      before: null,
      after: { id: 7, total: '7.50', note: 'n' },
      lsn: null,
      commit_time: null,
    });
    expect(await state.partitionsDone()).toEqual([{ table: orders, partitionId: '0' }]);
  });

  it('bounds snapshot requests by bytes too', async () => {
    const { sink } = await open({ batch_max_bytes: '1024' });
    await sink.writeSnapshotPartition(
      orders,
      { table: orders, partitionId: '0' },
      copyText(orderRows(1, 50)),
    );
    expect(receiver.events.length).toBe(50);
    expect(receiver.requests.length).toBeGreaterThan(3);
    for (const r of receiver.requests) expect(Buffer.byteLength(r.body)).toBeLessThanOrEqual(1024 + 20);
  });

  it('posts a batch as one signed request and stores the checkpoint after the 2xx', async () => {
    const { sink, state, pipelineId } = await open();
    const t1 = tx(1);
    const t2 = tx(2);
    await sink.applyBatch({
      changes: [
        ev(t1, { op: 'insert', after: { id: '1', total: '1.00', note: 'a' } }),
        ev(t1, { op: 'update', key: { id: '1' }, after: { id: '2', total: '2.00', note: 'b' } }),
        ev(t2, { op: 'delete', key: { id: '2' } }),
        ev(t2, { op: 'truncate', tables: [orders] }),
      ],
      commitLsn: t2.end,
      epoch: 1,
    });
    expect(await sink.readCheckpoint()).toEqual({ lsn: t2.end, epoch: 1 });
    expect(await state.readCheckpoint()).toEqual({ lsn: t2.end, epoch: 1, detail: {} });
    expect(receiver.requests.length).toBe(1);
    const [request] = receiver.requests as [Received];
    expect(request.events.map((e) => [e.id, e.op, e.key])).toEqual([
      ['0/1000/public/orders/0', 'insert', { id: 1 }],
      ['0/1000/public/orders/1', 'update', { id: 1 }],
      ['0/2000/public/orders/0', 'delete', { id: 2 }],
      ['0/2000/public/orders/1', 'truncate', null],
    ]);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['user-agent']).toMatch(/^replicator\/\d+\.\d+\.\d+/);
    expect(request.headers['x-replicator-pipeline']).toBe(pipelineId);
    expect(request.headers['idempotency-key']).toMatch(/^[0-9a-f]{32}$/);
    expect(verified(request.headers['x-replicator-signature'] as string, request.body)).toBe(true);
    // The secret goes nowhere; the receiver's own query does.
    expect(JSON.stringify(request.headers)).not.toContain(SECRET);
    expect(await sink.readCheckpoint()).toEqual({ lsn: t2.end, epoch: 1 });
  });

  it('tries again after 503 and 429, with the same idempotency key, honouring Retry-After', async () => {
    const { sink, state } = await open({ max_attempts: '3' });
    receiver.answers.push(status(503, { 'retry-after': '1' }), status(429));
    const started = Date.now();
    const t = tx(3);
    await sink.applyBatch({
      changes: [ev(t, { op: 'insert', after: { id: '9' } })],
      commitLsn: t.end,
      epoch: 1,
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(receiver.requests.length).toBe(3);
    expect(new Set(receiver.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    for (const r of receiver.requests)
      expect(verified(r.headers['x-replicator-signature'] as string, r.body)).toBe(true);
    expect((await state.readCheckpoint())?.lsn).toBe(t.end);
  });

  it('gives up a batch the receiver keeps refusing as busy: unreachable, no checkpoint', async () => {
    const { sink, state } = await open({ max_attempts: '2' });
    receiver.answers.push(status(503), status(503));
    const t = tx(4);
    const error = await failure(
      sink.applyBatch({ changes: [ev(t, { op: 'insert', after: { id: '9' } })], commitLsn: t.end, epoch: 1 }),
    );
    expect(error.code).toBe('WEBHOOK_UNAVAILABLE');
    expect(isUnreachable(error)).toBe(true);
    expect(receiver.requests.length).toBe(2);
    expect(await state.readCheckpoint()).toBeNull();
  });

  it('fails a 4xx at once, with a short excerpt of the answer and never the URL path or query', async () => {
    const { sink, state } = await open();
    receiver.answers.push(
      status(400, { 'content-type': 'text/plain' }, `invalid signature\n${'x'.repeat(100_000)}`),
    );
    const t = tx(5);
    const error = await failure(
      sink.applyBatch({ changes: [ev(t, { op: 'insert', after: { id: '9' } })], commitLsn: t.end, epoch: 1 }),
    );
    expect(error.message).toMatch(/^webhook http:\/\/127\.0\.0\.1:\d+ answered 400: invalid signature x+…$/);
    expect(error.message.length).toBeLessThan(300);
    expect(error.message).not.toContain('token=abc');
    expect(isUnreachable(error)).toBe(false);
    expect(receiver.requests.length).toBe(1);
    expect(await state.readCheckpoint()).toBeNull();
  });

  it('does not follow a redirect', async () => {
    const { sink } = await open();
    receiver.answers.push(status(302, { location: 'http://169.254.169.254/' }));
    const t = tx(6);
    const error = await failure(
      sink.applyBatch({ changes: [ev(t, { op: 'insert', after: { id: '9' } })], commitLsn: t.end, epoch: 1 }),
    );
    expect(error.message).toMatch(/answered 302 \(redirects are not followed/);
    expect(receiver.requests.length).toBe(1);
  });

  it('abandons a request past timeout_ms, and counts a closed port as unreachable', async () => {
    const silent = await Receiver.start(createHttpServer());
    servers.push(silent);
    silent.answers.push(
      () => {},
      () => {},
    );
    const { sink } = await open(
      { timeout_ms: '300', max_attempts: '2' },
      { url: `http://127.0.0.1:${silent.port}/` },
    );
    const t = tx(7);
    const error = await failure(
      sink.applyBatch({ changes: [ev(t, { op: 'insert', after: { id: '9' } })], commitLsn: t.end, epoch: 1 }),
    );
    expect(error.message).toMatch(/no complete answer within 300 ms/);
    expect([error.code, isUnreachable(error)]).toEqual(['WEBHOOK_UNAVAILABLE', true]);
    expect(silent.requests.length).toBe(2);

    const closed = await Receiver.start(createHttpServer());
    const port = closed.port;
    await closed.close();
    const { sink: nowhere } = await open({ max_attempts: '1' }, { url: `http://127.0.0.1:${port}/` });
    const refused = await failure(
      nowhere.applyBatch({
        changes: [ev(t, { op: 'insert', after: { id: '9' } })],
        commitLsn: t.end,
        epoch: 1,
      }),
    );
    expect([refused.code, isUnreachable(refused)]).toEqual(['WEBHOOK_UNAVAILABLE', true]);
  });

  it('refuses at connect time a name that resolves to loopback, and a loopback literal, when private access is off', async () => {
    const strict = { allowPrivate: false, https: false };
    for (const url of [`http://localhost:${receiver.port}/`, `http://127.0.0.1:${receiver.port}/`]) {
      // Settings as a connection saved before the operator withdrew private access, or a name that
      // resolved elsewhere when it was saved (DNS rebinding): only the connect-time check stands.
      const settings: WebhookSettings = {
        url,
        endpoint: new URL(url).origin,
        secret: SECRET,
        reach: strict,
        tls: {},
      };
      const { sink } = await open({ max_attempts: '3' }, { settings });
      const t = tx(8);
      const error = await failure(
        sink.applyBatch({
          changes: [ev(t, { op: 'insert', after: { id: '9' } })],
          commitLsn: t.end,
          epoch: 1,
        }),
      );
      expect((error as unknown as { code: string }).code).toBe('WEBHOOK_ADDRESS_REFUSED');
      expect(error.message).toMatch(/webhook_allow_private/);
      expect(error.message).not.toMatch(/127\.0\.0\.1(?!:)/);
      expect(isUnreachable(error)).toBe(false);
    }
    expect(receiver.requests.length).toBe(0);
  });

  it('posts over https, verifying the receiver with tls.ca_cert, and fails without it', async () => {
    const secure = await Receiver.start(
      createHttpsServer({
        key: readFileSync(join(certs.dir, 'server.key')),
        cert: readFileSync(join(certs.dir, 'server.crt')),
      }),
    );
    servers.push(secure);
    const url = `https://localhost:${secure.port}/hook`;
    const dsn = webhookConnectionType.checkDsn(`${url}?secret=${SECRET}`, PRIVATE);
    const withCa = { password: SECRET, tls: { ca_cert: certs.ca } };
    webhookConnectionType.checkTls(dsn, withCa);
    const settings = await webhookConnectionType.settings(dsn.publicDsn, withCa, PRIVATE);
    const { sink } = await open({}, { settings });
    const t = tx(9);
    await sink.applyBatch({
      changes: [ev(t, { op: 'insert', after: { id: '9' } })],
      commitLsn: t.end,
      epoch: 1,
    });
    expect(secure.requests.length).toBe(1);
    expect(
      verified(
        secure.requests[0]?.headers['x-replicator-signature'] as string,
        secure.requests[0]?.body as string,
      ),
    ).toBe(true);

    for (const tls of [{}, { ca_cert: certs.otherCa }]) {
      const untrusted = await webhookConnectionType.settings(
        dsn.publicDsn,
        { password: SECRET, tls },
        PRIVATE,
      );
      const { sink: refused } = await open({ max_attempts: '3' }, { settings: untrusted });
      const error = await failure(
        refused.applyBatch({
          changes: [ev(t, { op: 'insert', after: { id: '9' } })],
          commitLsn: t.end,
          epoch: 1,
        }),
      );
      expect(error.message).toMatch(/certificate/);
      expect(isUnreachable(error)).toBe(false);
    }
    expect(secure.requests.length).toBe(1);
  });

  it('splits a batch over the limits into requests, and after a failure midway posts only the rest', async () => {
    const state = memorySinkState();
    const { sink } = await open({ batch_max_events: '2' }, { state });
    const t0 = tx(14);
    await sink.applyBatch({
      changes: [ev(t0, { op: 'insert', after: { id: '1' } })],
      commitLsn: t0.end,
      epoch: 1,
    });
    const t1 = tx(15);
    const t2 = tx(16);
    const changes = [
      ...Array.from({ length: 3 }, (_, i) => ev(t1, { op: 'insert', after: { id: String(10 + i) } })),
      ...Array.from({ length: 3 }, (_, i) => ev(t2, { op: 'insert', after: { id: String(20 + i) } })),
    ];
    receiver.answers.push(status(200), status(200), status(400));
    await expect(sink.applyBatch({ changes, commitLsn: t2.end, epoch: 1 })).rejects.toThrow(/answered 400/);
    expect(receiver.requests.map((r) => r.events.length)).toEqual([1, 2, 2, 2]);
    expect(await state.readCheckpoint()).toEqual({
      lsn: t0.end,
      epoch: 1,
      detail: {
        posted: [
          { table: 'public/orders', commit_lsn: t1.lsnText, count: 3 },
          { table: 'public/orders', commit_lsn: t2.lsnText, count: 1 },
        ],
      },
    });
    await sink.close();

    const { sink: again } = await open({ batch_max_events: '2' }, { state });
    await again.applyBatch({ changes, commitLsn: t2.end, epoch: 1 });
    const ids = receiver.events.map((e) => e.id);
    // The refused request's events come again, under the same ids; the accepted ones do not.
    expect(ids.slice(7)).toEqual([`${t2.lsnText}/public/orders/1`, `${t2.lsnText}/public/orders/2`]);
    expect(receiver.requests.at(-1)?.headers['idempotency-key']).toBe(
      receiver.requests.at(-2)?.headers['idempotency-key'],
    );
    expect(await state.readCheckpoint()).toEqual({ lsn: t2.end, epoch: 1, detail: {} });
  });
});
