import { afterAll, beforeAll, describe, it } from 'vitest';
import { sqlOn, waitFor } from '../support/replication-fixture.js';
import { FaultRig } from './support/fault-rig.js';
import { scale } from './support/scale.js';

/**
 * Scenario 5: the sink goes away under load: stopped for a long time (minutes at full scale),
 * stopped across a restart of the service, its sessions terminated every 0.7 s, and restarted in
 * about a second. Each time the pipeline comes back by itself, runs with no error shown, the
 * process survives, and the oracle holds.
 */
describe('fault 5: the sink down, cut off and restarted', () => {
  let rig: FaultRig;

  beforeAll(async () => {
    rig = await FaultRig.start('sink');
    await rig.startPipeline();
    await rig.waitForPhase('streaming');
  }, scale.testTimeoutMs);
  afterAll(() => rig?.dispose());

  /** Load through the whole fault (stopped once it is over), then the oracle. */
  async function underLoad(what: string, fault: () => Promise<void>): Promise<void> {
    const load = rig.startLoad({ transactions: Number.MAX_SAFE_INTEGER, maxMs: scale.testTimeoutMs });
    await load.reached(50 + Math.floor(Math.random() * 100));
    await fault();
    await load.stop();
    const result = await rig.drainAndCheck();
    await rig.waitHealthy();
    rig.note(`${what}: converged; ${result.committed} load transactions; ${result.samples} samples`);
  }

  it(
    'stopped under load for a while: catches up when it returns',
    async () => {
      await underLoad(`sink down ${scale.sinkOutageMs / 1000} s`, async () => {
        await rig.clusters.sink.stopServer('fast');
        // The outage lasts while the load goes on; the service's failed writes are what it is about.
        await new Promise((r) => setTimeout(r, scale.sinkOutageMs));
        await rig.clusters.sink.startServer();
      });
    },
    scale.testTimeoutMs,
  );

  it(
    'stopped across a restart of the service: the restarted service catches up when it returns',
    async () => {
      await underLoad('sink down across a service restart', async () => {
        await rig.clusters.sink.stopServer('fast');
        await waitFor(
          async () => (await rig.pipeline())?.error,
          'the pipeline to show the sink error',
          120_000,
        );
        await rig.service.stop();
        await rig.service.start();
        await new Promise((r) => setTimeout(r, scale.sinkOutageMs / 2));
        await rig.clusters.sink.startServer();
      });
    },
    scale.testTimeoutMs,
  );

  it(
    'its sessions terminated every 0.7 s: the batches go through between the cuts',
    async () => {
      await underLoad('sink sessions terminated every 0.7 s', async () => {
        let cuts = 0;
        const until = Date.now() + Math.max(10_000, scale.sinkOutageMs / 5);
        while (Date.now() < until) {
          const [row] = await sqlOn<{ n: number }>(
            rig.urls.sink,
            "SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = 'replicator-sink'",
          );
          cuts += row?.n ?? 0;
          await new Promise((r) => setTimeout(r, 700));
        }
        rig.note(`${cuts} sink sessions terminated`);
      });
    },
    scale.testTimeoutMs,
  );

  it(
    'restarted in about a second (immediate shutdown, crash recovery): catches up',
    async () => {
      await underLoad('sink restarted', async () => {
        for (let i = 0; i < scale.repetitions; i++) {
          await rig.clusters.sink.stopServer('immediate');
          await rig.clusters.sink.startServer();
          await rig.load?.reached((rig.load?.committed.length ?? 0) + 50);
        }
      });
    },
    scale.testTimeoutMs,
  );
});
