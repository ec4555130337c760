import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlOn, waitFor } from '../support/replication-fixture.js';
import { FaultRig } from './support/fault-rig.js';
import { scale } from './support/scale.js';

/**
 * Scenario 1, the part a resumed copy decides: the service is killed after some partitions of the
 * copy, every row is updated twice while it is down, and it is started again. The copy resumes in
 * a newer snapshot, which holds both updates for the partitions left; the stream replays them
 * from the slot's start. Applied again, the first would take those rows back a version (which the
 * version guard records) until the second came; the stream skips what each partition's copy
 * holds, and applies the updates to the partitions copied before.
 */
describe('fault 1: a copy resumed in a newer snapshot', () => {
  let rig: FaultRig;
  const rows = 20_000;

  beforeAll(async () => {
    rig = await FaultRig.start('resumed', {
      seedRows: rows,
      snapshot: { partition_rows: 1_000, parallelism: 1 },
    });
  }, scale.testTimeoutMs);
  afterAll(() => rig?.dispose());

  it(
    'applies nothing the resumed copy already holds, and nothing twice',
    async () => {
      await rig.startPipeline();
      const reached = await waitFor(
        async () => {
          const done = await rig.partitionsDone('public.items');
          if (done >= 2) return `${done} of 20 partitions`;
          return (await rig.phase()) === 'streaming' ? 'streaming' : undefined;
        },
        'two partitions copied',
        180_000,
        10,
      );
      await rig.service.kill();
      rig.note(`killed at ${reached}`);
      expect(reached).not.toBe('streaming');
      for (let i = 0; i < 2; i++) await sqlOn(rig.urls.source, 'UPDATE items SET version = version + 1');
      await rig.service.start();
      const result = await rig.drainAndCheck();
      rig.note(`converged; ${result.samples} samples`);
    },
    scale.testTimeoutMs,
  );
});
