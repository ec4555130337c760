import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ChangeEnvelope } from '../../src/sinks/change-envelope.js';
import { replicationDatabases, sqlOn, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

/**
 * A receiver that can answer 503 for a while, or go away altogether (its port closed, its
 * connections cut) and come back on the same port. It keeps only the requests it accepted.
 */
class Receiver {
  readonly accepted: ChangeEnvelope[][] = [];
  busy = false;
  private server: Server;
  private port = 0;

  constructor() {
    this.server = this.make();
  }

  private make(): Server {
    return createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (this.busy) {
          res.writeHead(503, { 'retry-after': '0' }).end('maintenance');
          return;
        }
        this.accepted.push(
          (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { events: ChangeEnvelope[] }).events,
        );
        res.writeHead(200).end();
      });
    });
  }

  async up(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async down(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
    this.server = this.make();
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  get events(): ChangeEnvelope[] {
    return this.accepted.flat();
  }
}

/**
 * The receiver is busy (503) and then gone mid-stream while the source keeps changing, and comes
 * back each time: the failed requests are counted, the pipeline catches up by itself, and every
 * change arrives. A request the receiver did not accept is not a delivery, so here no event may
 * come twice (a duplicate needs an accepted request whose answer was lost).
 */
describe('a webhook receiver down mid-stream', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.up();
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'webhook_outage');
    await sqlOn(
      dbs.source,
      `CREATE TABLE items (id int PRIMARY KEY, v text);
       INSERT INTO items SELECT g, 'seed ' || g FROM generate_series(1, 100) g;`,
    );
    const config = testConfig(dbs.store);
    config.connections.webhookAllowPrivate = true;
    service = await startTestService(config);
    for (const connection of [
      { name: 'src', type: 'postgres', dsn: dbs.source },
      { name: 'hook', type: 'webhook', dsn: `${receiver.url}?secret=${randomUUID()}` },
    ]) {
      const created = await service.request('POST', '/v1/connections', connection);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
  });
  afterAll(async () => {
    await service?.request('PUT', '/v1/pipelines/to-hook/state', { state: 'stop' });
    await service?.stop();
    await receiver.down();
  });

  async function changeSource(from: number): Promise<void> {
    for (let i = 0; i < 5; i++) {
      const base = from + i * 10;
      await sqlOn(
        dbs.source,
        `INSERT INTO items SELECT g, 'new ' || g FROM generate_series(${base}, ${base + 9}) g;
         UPDATE items SET v = v || ' changed' WHERE id = ${i + 1};
         DELETE FROM items WHERE id = ${50 + i};`,
      );
    }
  }

  const sourceRows = async () =>
    Object.fromEntries(
      (await sqlOn<{ id: number; v: string }>(dbs.source, 'SELECT id, v FROM items ORDER BY id')).map((r) => [
        String(r.id),
        r.v,
      ]),
    );

  /** The rows the received events fold to, each id once; null if an id came twice. */
  function folded(): Record<string, unknown> | null {
    const rows: Record<string, unknown> = {};
    const seen = new Set<string>();
    for (const e of receiver.events) {
      if (seen.has(e.id)) return null;
      seen.add(e.id);
      if (e.op === 'delete' || e.op === 'update') delete rows[String(e.key?.id)];
      if (e.after) rows[String(e.after.id)] = e.after.v;
    }
    return rows;
  }

  const sinkErrors = async (): Promise<number> =>
    (await service.request('GET', '/v1/pipelines/to-hook/metrics')).body.sink_errors_total;

  const caughtUp = async (what: string) => {
    const expected = JSON.stringify(await sourceRows());
    await waitFor(async () => JSON.stringify(folded()) === expected, what, 90_000);
  };

  it('catches up after the receiver was busy, then gone, with nothing lost and nothing twice', async () => {
    const created = await service.request('POST', '/v1/pipelines', {
      name: 'to-hook',
      source: { connection: 'src', tables: ['public.items'] },
      sink: { connection: 'hook', properties: { max_attempts: '2', timeout_ms: '2000' } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await service.request('PUT', '/v1/pipelines/to-hook/state', { state: 'start' })).status).toBe(
      200,
    );
    await waitFor(async () => receiver.events.length >= 100, 'the snapshot');

    // Busy: every request answered 503 for a while.
    receiver.busy = true;
    await changeSource(1000);
    await waitFor(async () => (await sinkErrors()) > 0, 'a failed request counted', 60_000);
    receiver.busy = false;
    await caughtUp('the receiver to catch up after it was busy');
    const afterBusy = await sinkErrors();

    // Gone: the port closed and the open connections cut.
    await receiver.down();
    await changeSource(2000);
    await waitFor(async () => (await sinkErrors()) > afterBusy, 'a failed connection counted', 60_000);
    await receiver.up();
    await caughtUp('the receiver to catch up after it came back');

    const pipeline = (await service.request('GET', '/v1/pipelines/to-hook')).body;
    expect(pipeline.state).toBe('running');
    expect(folded()).not.toBeNull();
  });
});
