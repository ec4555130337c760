import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/replication-fixture.js';
import { FaultRig } from './support/fault-rig.js';
import { scale } from './support/scale.js';

/**
 * Scenario 4: the source PostgreSQL restarted under load, as `pg_ctl restart` does it: `-m fast`
 * (SIGINT: sessions ended, a shutdown checkpoint) and `-m immediate` (SIGQUIT: no checkpoint,
 * crash recovery), each during the snapshot and during streaming. The pipeline comes back by
 * itself (a source that cannot be reached is retried every 60 s once it runs) and converges.
 */
describe('fault 4: the source restarted', () => {
  let rig: FaultRig;
  const rows = scale.seedRows * 15;
  const partitionRows = Math.max(1_000, Math.floor(rows / 40));

  beforeAll(async () => {
    rig = await FaultRig.start('source', { seedRows: rows, snapshot: { partition_rows: partitionRows } });
  }, scale.testTimeoutMs);
  afterAll(() => rig?.dispose());

  async function restartSource(mode: 'fast' | 'immediate', when: string): Promise<void> {
    await rig.clusters.source.stopServer(mode);
    await rig.clusters.source.startServer();
    rig.note(`source restarted -m ${mode} ${when}`);
  }

  /** Waits until some partitions of the current copy are in, or the pipeline streams already. */
  const partOfTheCopy = (least: number) =>
    waitFor(
      async () => {
        if ((await rig.partitionsDone('public.items')) >= least) return 'snapshot';
        return (await rig.phase()) === 'streaming' ? 'streaming' : undefined;
      },
      `${least} partitions copied`,
      scale.testTimeoutMs,
      25,
    );

  it(
    'comes back by itself after fast and immediate restarts in the snapshot and while streaming',
    async () => {
      await rig.startPipeline();
      rig.startLoad({ maxMs: scale.loadMaxMs * 4, transactions: scale.loadTransactions * 2 });
      const during: string[] = [];
      during.push((await partOfTheCopy(3)) as string);
      await restartSource('fast', `in the ${during.at(-1)}`);
      // The copy starts again after a restart (its exported snapshot is gone): a second point in it.
      during.push((await partOfTheCopy(3)) as string);
      await restartSource('immediate', `in the ${during.at(-1)}`);
      await rig.waitForPhase('streaming', scale.testTimeoutMs);
      for (const mode of ['fast', 'immediate'] as const) {
        const { checkpoint } = await rig.positions();
        await rig.waitApplied(checkpoint);
        await restartSource(mode, 'while streaming');
      }
      const result = await rig.drainAndCheck();
      await rig.waitHealthy();
      rig.note(`converged; ${result.committed} load transactions; ${result.samples} samples`);
      expect(during).toContain('snapshot');
    },
    scale.testTimeoutMs * 2,
  );
});
