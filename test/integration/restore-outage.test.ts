import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MAX_RETRIES } from '../../machines/pipeline.js';
import type { Config } from '../../src/config/options.js';
import { seriesValue } from '../support/metrics-text.js';
import { replicationDatabases, sqlOn, waitConverged, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const [cluster] = inject('pgClusters');

/**
 * A sink that is out of reach across a restart of the service: the pipeline comes back running
 * and waits for the sink as long as it takes (far more attempts than a start allows, made quick
 * here by a short backoff cap), then catches up by itself; an error from before is cleared once
 * the pipeline is healthy, even while the source stays idle.
 */
describe('a pipeline restored while its sink is out of reach', { timeout: 240_000 }, () => {
  let config: Config;
  let service: TestService | undefined;
  let proxy: TcpProxy;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;

  const api = (method: string, path: string, body?: unknown) =>
    (service as TestService).request(method, path, body);
  const pipeline = async () => (await api('GET', '/v1/pipelines/restored')).body;
  const retries = async () =>
    seriesValue(
      await (await fetch(`${(service as TestService).url}/metrics`)).text(),
      'replicator_pipeline_retries{pipeline="restored"}',
    ) ?? 0;

  /** Stops the service, runs `whileStopped`, and starts it again on the same store. */
  async function restart(whileStopped: () => Promise<void>) {
    await service?.stop();
    service = undefined;
    await whileStopped();
    service = await startTestService(config);
  }

  /** Waits for the pipeline to show the unreachable sink, running, over more than MAX_RETRIES attempts. */
  async function waitsForTheSink() {
    const seen = new Set<string>();
    await waitFor(async () => {
      const body = await pipeline();
      seen.add(body.state);
      if (body.state === 'failed') throw new Error(`the pipeline failed: ${body.error}`);
      return body.error?.includes(`127.0.0.1:${proxy.listenPort}`) && (await retries()) > MAX_RETRIES;
    }, 'more than MAX_RETRIES attempts at the unreachable sink');
    const body = await pipeline();
    expect(body.state).toBe('running');
    expect(body.error).toContain('ECONNREFUSED');
    expect([...seen]).toEqual(['running']);
  }

  beforeAll(async () => {
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'restore');
    await sqlOn(
      dbs.source,
      `CREATE TABLE items (id int PRIMARY KEY, v text);
       INSERT INTO items SELECT g, 'seed ' || g FROM generate_series(1, 100) g;`,
    );
    const sinkUrl = new URL(dbs.sink);
    proxy = await TcpProxy.start(sinkUrl.hostname, Number(sinkUrl.port));
    sinkUrl.port = String(proxy.listenPort);
    config = { ...testConfig(dbs.store), retryMaxDelayMs: 50 };
    service = await startTestService(config);
    for (const [name, dsn] of [
      ['src', dbs.source],
      ['dst', sinkUrl.toString()],
    ] as const) {
      expect((await api('POST', '/v1/connections', { name, type: 'postgres', dsn })).status).toBe(201);
    }
    const created = await api('POST', '/v1/pipelines', {
      name: 'restored',
      source: { connection: 'src', tables: ['public.items'] },
      sink: { connection: 'dst' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await api('PUT', '/v1/pipelines/restored/state', { state: 'start' })).status).toBe(200);
    await waitConverged(dbs.source, dbs.sink, 'items');
  });
  afterAll(async () => {
    await service?.stop();
    await proxy?.stop();
  });

  it('comes back running, retries past the limit of a start, and catches up when the sink returns', async () => {
    await restart(async () => {
      await proxy.down();
      await sqlOn(
        dbs.source,
        `INSERT INTO items SELECT g, 'new ' || g FROM generate_series(101, 150) g;
         UPDATE items SET v = v || ' changed' WHERE id <= 10;
         DELETE FROM items WHERE id BETWEEN 90 AND 95;`,
      );
    });
    await waitsForTheSink();

    await proxy.up();
    await waitConverged(dbs.source, dbs.sink, 'items');
    await waitFor(async () => (await pipeline()).error === null, 'the error cleared');
    expect((await pipeline()).state).toBe('running');
    expect(await retries()).toBe(0);
    // One run, opened when the pipeline was restored, stays open while it waits and catches up.
    const runs = (await api('GET', '/v1/pipelines/restored/runs')).body.runs;
    expect(runs[0]).toMatchObject({ outcome: 'running' });
  });

  it('clears the error once reconnected while the source stays idle', async () => {
    await restart(() => proxy.down());
    await waitsForTheSink();

    // Nothing changes at the source: no batch will come to prove the sink healthy.
    await proxy.up();
    await waitFor(
      async () => (await pipeline()).error === null,
      'the error cleared with the source idle',
      30_000,
    );
    expect((await pipeline()).state).toBe('running');
    expect(await retries()).toBe(0);
    await waitConverged(dbs.source, dbs.sink, 'items');
  });

  it('still fails a batch refused at every attempt, the source idle around it', async () => {
    // A failure that may heal by retrying, on every attempt: keepalives between the attempts must
    // not count as health, or the count would start over and the pipeline retry forever.
    await sqlOn(
      dbs.sink,
      `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS
         $$ BEGIN RAISE EXCEPTION 'could not serialize access' USING ERRCODE = '40001'; END $$;
       CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON items FOR EACH ROW EXECUTE FUNCTION refuse();`,
    );
    await sqlOn(dbs.source, "INSERT INTO items VALUES (1000, 'refused')");
    let refused = false;
    await waitFor(
      async () => {
        const body = await pipeline();
        // Once shown, the error stays until the pipeline fails: never cleared between two attempts.
        if (refused && body.error === null) throw new Error('the error was cleared between two attempts');
        refused ||= body.error?.includes('could not serialize access') === true;
        return body.state === 'failed';
      },
      'the pipeline to fail after its retries',
      90_000,
    );
    expect((await pipeline()).error).toContain('could not serialize access');

    await sqlOn(dbs.sink, 'DROP TRIGGER refuse ON items');
    expect((await api('PUT', '/v1/pipelines/restored/state', { state: 'start' })).status).toBe(200);
    await waitConverged(dbs.source, dbs.sink, 'items');
    await waitFor(async () => (await pipeline()).error === null, 'the error cleared');
  });

  it('can be stopped while it waits for the sink', async () => {
    await restart(() => proxy.down());
    await waitFor(async () => (await retries()) > 0, 'an attempt at the unreachable sink');
    expect((await api('PUT', '/v1/pipelines/restored/state', { state: 'stop' })).status).toBe(200);
    await waitFor(async () => (await pipeline()).state === 'stopped', 'the pipeline stopped');
    await proxy.up();
  });
});
