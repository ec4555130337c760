import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import {
  type replicationDatabases,
  replicationService,
  sqlOn,
  waitFor,
} from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const cluster = inject('pgClusters')[0];

describe('the snapshot is a phase of running, and its end is a checkpoint', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;

  beforeAll(async () => {
    ({ dbs, service } = await replicationService(
      cluster?.adminUrl as string,
      'phases',
      `CREATE TABLE big (id int PRIMARY KEY, pad text);
       INSERT INTO big SELECT g, repeat('x', 100) FROM generate_series(1, 200000) g`,
    ));
    await service.request('POST', '/v1/pipelines', {
      name: 'phases',
      source: { connection: 'src', tables: ['public.big'] },
      sink: { connection: 'dst' },
      snapshot: { partition_rows: 20000 },
    });
  });
  afterAll(() => service?.stop());

  it('reads running whenever progress says snapshot, and has a checkpoint once the snapshot is done', async () => {
    const socket = new WebSocket(`${service.url.replace('http', 'ws')}/v1/live`);
    const stats: any[] = [];
    socket.on('message', (data) => {
      const message = JSON.parse(String(data));
      if (message.type === 'pipeline.stats' && message.name === 'phases') stats.push(message);
    });
    await new Promise((resolve) => socket.once('open', resolve));

    expect((await service.request('PUT', '/v1/pipelines/phases/state', { state: 'start' })).status).toBe(200);
    const seen: string[] = [];
    let sawSnapshot = false;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const progress = (await service.request('GET', '/v1/pipelines/phases/progress')).body;
      const pipeline = (await service.request('GET', '/v1/pipelines/phases')).body;
      const listed = (await service.request('GET', '/v1/pipelines')).body.find(
        (p: any) => p.name === 'phases',
      );
      if (progress.phase === 'snapshot') {
        sawSnapshot = true;
        seen.push(`${pipeline.state}/${listed.state}`);
      }
      if (progress.phase === 'streaming') break;
    }
    expect(sawSnapshot).toBe(true);
    expect(new Set(seen)).toEqual(new Set(['running/running']));

    // No change was streamed yet: the checkpoint is the snapshot's end.
    const pipeline = (await service.request('GET', '/v1/pipelines/phases')).body;
    expect(pipeline.last_checkpoint_at).not.toBeNull();
    const metrics = (await service.request('GET', '/v1/pipelines/phases/metrics')).body;
    expect(metrics.last_checkpoint_at).toBe(pipeline.last_checkpoint_at);
    const live = await waitFor(
      async () => stats.at(-1)?.last_checkpoint_at,
      'a live figure with the checkpoint',
    );
    expect(live).toBe(pipeline.last_checkpoint_at);
    socket.close();
  });

  it('keeps the checkpoint time across a restart of the service', async () => {
    const before = (await service.request('GET', '/v1/pipelines/phases')).body.last_checkpoint_at;
    await waitFor(
      async () =>
        (await sqlOn(dbs.store, "SELECT last_checkpoint_at FROM pipelines WHERE name = 'phases'"))[0]
          .last_checkpoint_at,
      'the checkpoint to be stored',
    );
    await service.stop();
    service = await startTestService(testConfig(dbs.store));
    const after = (await service.request('GET', '/v1/pipelines/phases')).body;
    expect(after.last_checkpoint_at).toBe(before);
  });
});
