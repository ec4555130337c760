import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/replication-fixture.js';
import { FaultRig } from './support/fault-rig.js';
import { scale } from './support/scale.js';

/**
 * Scenario 1: the service is killed with SIGKILL during the snapshot, at random points of the
 * copy (after a random number of partitions, others in flight), several times, and while the sink
 * builds the deferred primary key of the copied table; each time it is started again on the same
 * data directory. The copy resumes and the pipeline converges.
 */
describe('fault 1: kill -9 during the snapshot', () => {
  let rig: FaultRig;
  const rows = scale.seedRows * 15;
  const partitionRows = Math.max(1_000, Math.floor(rows / 40));

  beforeAll(async () => {
    rig = await FaultRig.start('snapshot', {
      seedRows: rows,
      snapshot: { partition_rows: partitionRows },
    });
  }, scale.testTimeoutMs);
  afterAll(() => rig?.dispose());

  it(
    'converges after kills at random points of the copy and in the key build',
    async () => {
      await rig.slowKeyBuilds(3);
      await rig.startPipeline();
      rig.startLoad();
      const partitions = Math.ceil(rows / partitionRows);
      const hits: string[] = [];
      // Random kill points, in partitions done, spread over the copy and rising (each restart resumes).
      const points = Array.from({ length: scale.repetitions }, (_, i) =>
        Math.floor(((i + Math.random()) / (scale.repetitions + 1)) * partitions),
      );
      for (const point of points) {
        const reached = await waitFor(
          async () => {
            const done = await rig.partitionsDone('public.items');
            if (done >= point) return `${done} of ${partitions} partitions`;
            return (await rig.phase()) === 'streaming' ? 'streaming' : undefined;
          },
          `${point} partitions copied`,
          180_000,
          25,
        );
        rig.note(`kill at ${reached}`);
        hits.push(reached as string);
        await rig.service.kill();
        await rig.service.start();
        rig.note('started again');
      }
      const inKeyBuild = await rig.killDuringKeyBuild();
      rig.note(`kill in the key build: ${inKeyBuild}`);
      if (inKeyBuild) await rig.service.start();
      const result = await rig.drainAndCheck();
      rig.note(`converged; ${result.committed} load transactions; ${result.samples} samples`);
      expect(inKeyBuild).toBe(true);
      expect(hits.filter((h) => h !== 'streaming').length).toBe(scale.repetitions);
    },
    scale.testTimeoutMs,
  );
});
