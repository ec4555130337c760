import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/replication-fixture.js';
import { FaultRig } from './support/fault-rig.js';
import { scale } from './support/scale.js';

/**
 * Scenario 2: the service is killed with SIGKILL while it streams under load: at random points,
 * and between the sink commit and the acknowledgement. The acknowledgement follows the sink
 * commit within a millisecond, so for the latter the service's replication connection is stalled
 * one way (what it sends is held by a proxy, the stream still arrives) until the sink's
 * checkpoint is past the slot's confirmed_flush_lsn, and it is killed then: the restarted
 * service is sent again transactions the sink already holds. Each time it is started again on the
 * same data directory; the pipeline converges with nothing applied twice.
 */
describe('fault 2: kill -9 while streaming', () => {
  let rig: FaultRig;

  beforeAll(async () => {
    rig = await FaultRig.start('streaming', { sourceThroughProxy: true });
  }, scale.testTimeoutMs);
  afterAll(() => rig?.dispose());

  it(
    'converges after kills at random points and between the sink commit and the acknowledgement',
    async () => {
      await rig.startPipeline();
      await rig.waitForPhase('streaming');
      // The load lasts through every round, however long restarts take on a busy machine (a held
      // acknowledgement needs new commits to show), and is stopped after the last.
      const load = rig.startLoad({ maxMs: scale.testTimeoutMs, transactions: Number.MAX_SAFE_INTEGER });
      const proxy = rig.sourceProxy as NonNullable<typeof rig.sourceProxy>;
      const hits: string[] = [];
      for (let round = 0; round < scale.repetitions * 2; round++) {
        // A random point of the load: after a random number of further commits.
        await load.reached(load.committed.length + 20 + Math.floor(Math.random() * 150));
        if (round % 2 === 1) {
          // Only the replication connection: the service's other session on the source answers
          // on (a table the stream announces again, after an autovacuum say, is read from the
          // catalog before its changes are applied).
          // Something is held, or the test would kill at a random point and call it the window.
          expect(proxy.holdRequests({ replicationOnly: true })).toBeGreaterThanOrEqual(1);
          await waitFor(
            async () => {
              const { slot, checkpoint } = await rig.positions();
              // The slot holds lsn - 1 for an acknowledged lsn.
              return checkpoint > slot + 1n;
            },
            'the sink checkpoint ahead of the slot',
            60_000,
          );
        }
        await rig.service.kill();
        const { slot, checkpoint } = await rig.positions();
        proxy.releaseRequests();
        const between = checkpoint > slot + 1n;
        hits.push(between ? `sink ahead of the slot by ${checkpoint - slot} bytes` : 'random');
        rig.note(`kill ${round + 1}: ${hits.at(-1)}`);
        await rig.service.start();
        await rig.waitApplied(checkpoint);
      }
      // The load ends with the faults: what follows is the drain.
      await load.stop();
      const result = await rig.drainAndCheck();
      await rig.waitHealthy();
      rig.note(`converged; ${result.committed} load transactions; ${result.samples} samples`);
      expect(hits.filter((h) => h !== 'random').length).toBeGreaterThanOrEqual(scale.repetitions);
    },
    scale.testTimeoutMs,
  );
});
