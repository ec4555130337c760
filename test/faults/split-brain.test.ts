import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlOn, waitFor } from '../support/replication-fixture.js';
import { FaultRig, PIPELINE } from './support/fault-rig.js';
import { scale } from './support/scale.js';
import type { ServiceChild } from './support/service-child.js';

/**
 * Scenario 13: two service processes on one metadata database, both believing they own the
 * pipeline. The owner is frozen (SIGSTOP) past its lease while it writes a batch into the sink
 * (its transaction open), the other worker takes the pipeline over and goes on, then the frozen
 * one is let go (SIGCONT) and carries on from where it was. Its writes are refused by the fencing
 * epoch, nothing is applied twice, the oracle holds and both processes stay up. Repeated, the
 * roles swapping each time.
 */
describe('fault 13: two workers believing they own the pipeline', () => {
  let rig: FaultRig;

  beforeAll(async () => {
    rig = await FaultRig.start('fencing', { leaseTtl: '3s' });
    await rig.addService();
    await rig.startPipeline();
    await rig.waitForPhase('streaming');
    // Every batch slowed down in the sink (the load writes load_tx in each transaction), so that a
    // worker is often caught with its batch's transaction open.
    await sqlOn(
      rig.urls.sink,
      `CREATE FUNCTION slow_batch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.2); RETURN NULL; END $$;
       CREATE TRIGGER slow_batch AFTER INSERT ON public.load_tx FOR EACH STATEMENT EXECUTE FUNCTION slow_batch();`,
    );
  }, scale.testTimeoutMs);
  afterAll(() => rig?.dispose());

  /** The service whose worker holds the pipeline's lease, as the fleet reports it. */
  async function owner(): Promise<ServiceChild | undefined> {
    for (const service of rig.services) {
      if (!service.responsive) continue;
      const res = await service.request('GET', '/v1/workers').catch(() => undefined);
      if (res?.status !== 200) continue;
      const holder = (res.body as { pid: number; status: string; pipelines: string[] }[]).find(
        (w) =>
          w.status === 'live' && (w.pipelines.includes(PIPELINE) || w.pipelines.includes(rig.pipelineId)),
      );
      return rig.services.find((s) => s.pid === holder?.pid);
    }
    return undefined;
  }

  const epoch = async () =>
    Number(
      (
        await sqlOn<{ epoch: string }>(
          rig.urls.sink,
          'SELECT epoch::text FROM _replicator.checkpoints WHERE pipeline_id = $1',
          [rig.pipelineId],
        )
      )[0]?.epoch ?? 0,
    );

  /** Whether a sink session of the service has a transaction that wrote (a batch under way). */
  const writingBatch = async () =>
    (
      await sqlOn<{ n: number }>(
        rig.urls.sink,
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'replicator-sink' AND backend_xid IS NOT NULL",
      )
    )[0]?.n ?? 0;

  it(
    'fences the frozen owner when it wakes, and converges',
    async () => {
      const load = rig.startLoad({ maxMs: scale.loadMaxMs * 3, transactions: scale.loadTransactions * 2 });
      const frozenInBatch: boolean[] = [];
      for (let round = 0; round < scale.repetitions; round++) {
        const frozen = (await waitFor(owner, 'a worker owning the pipeline', 120_000)) as ServiceChild;
        const before = await epoch();
        await load.reached(load.committed.length + 20 + Math.floor(Math.random() * 100));
        // Frozen while a batch is being written if one is caught within a few seconds, else at a random point.
        const inBatch = await waitFor(
          async () => (await writingBatch()) > 0,
          'a batch being written',
          5_000,
          10,
        ).then(
          () => true,
          () => false,
        );
        frozen.freeze();
        frozenInBatch.push(inBatch);
        rig.note(
          `round ${round + 1}: owner ${frozen.pid} frozen ${inBatch ? 'inside a batch' : 'between batches'}`,
        );
        // The other worker takes over (a higher epoch in the sink) and writes on.
        const next = (await waitFor(
          async () => {
            const o = await owner();
            return o && o !== frozen ? o : undefined;
          },
          'the other worker to take the pipeline over',
          120_000,
        )) as ServiceChild;
        await waitFor(async () => (await epoch()) > before, 'a batch under the new epoch', 120_000);
        await load.reached(load.committed.length + 50);
        frozen.thaw();
        rig.note(`round ${round + 1}: ${next.pid} took over; ${frozen.pid} let go`);
        // The woken one learns it lost the lease; the pipeline goes on with one owner.
        await waitFor(
          async () => {
            const res = await frozen.request('GET', '/v1/health').catch(() => undefined);
            return res?.status === 200;
          },
          'the woken service to answer',
          60_000,
        );
      }
      const result = await rig.drainAndCheck();
      await rig.waitHealthy();
      rig.note(
        `converged; frozen inside a batch ${frozenInBatch.filter(Boolean).length} of ${frozenInBatch.length} times; ${result.committed} load transactions`,
      );
      expect(rig.services.every((s) => s.running)).toBe(true);
    },
    scale.testTimeoutMs * 2,
  );
});
