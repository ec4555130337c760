import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/replication-fixture.js';
import { FaultRig } from './support/fault-rig.js';
import { scale } from './support/scale.js';

/**
 * Scenario 3: the source ends the pipeline's walsender (pg_terminate_backend, as an operator or
 * a failover tool would) while it streams under load, several times at random points. The
 * pipeline reconnects by itself and converges, with nothing lost or applied twice.
 */
describe('fault 3: the walsender terminated', () => {
  let rig: FaultRig;

  beforeAll(async () => {
    rig = await FaultRig.start('walsender');
  }, scale.testTimeoutMs);
  afterAll(() => rig?.dispose());

  it(
    'reconnects by itself and converges',
    async () => {
      await rig.startPipeline();
      await rig.waitForPhase('streaming');
      const load = rig.startLoad();
      let terminated = 0;
      for (let round = 0; round < scale.repetitions * 2; round++) {
        await load.reached(load.committed.length + 20 + Math.floor(Math.random() * 150));
        // The walsender is back when the slot is active again (after the first, a reconnect).
        await waitFor(() => rig.terminateWalsender(), 'an active walsender to terminate', 120_000);
        terminated++;
      }
      // The load ends with the faults: what follows is the drain.
      await load.stop();
      const result = await rig.drainAndCheck();
      console.info(
        `fault 3: ${terminated} walsenders terminated; ${result.committed} load transactions; ${result.samples} samples`,
      );
      expect(terminated).toBe(scale.repetitions * 2);
    },
    scale.testTimeoutMs,
  );
});
