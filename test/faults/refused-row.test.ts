import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlOn, waitFor } from '../support/replication-fixture.js';
import { FaultRig, PIPELINE } from './support/fault-rig.js';
import { scale } from './support/scale.js';

/**
 * Scenario 6: the sink refuses one row under load (a CHECK constraint its owner added). The
 * pipeline fails with the documented error naming the table, the key and the constraint, and
 * nothing committed after that row is applied meanwhile; once the constraint is dropped and the
 * pipeline started, it converges.
 */
describe('fault 6: a row the sink refuses', () => {
  let rig: FaultRig;

  beforeAll(async () => {
    rig = await FaultRig.start('refused');
    await rig.startPipeline();
    await rig.waitForPhase('streaming');
  }, scale.testTimeoutMs);
  afterAll(() => rig?.dispose());

  it(
    'fails naming the row, skips nothing after it, and converges once the row is allowed',
    async () => {
      await sqlOn(
        rig.urls.sink,
        "ALTER TABLE public.items ADD CONSTRAINT no_poison CHECK (payload <> 'poison')",
      );
      const load = rig.startLoad();
      await load.reached(50);
      // The refused row, in a transaction of its own amid the load; where its commit lies at the earliest.
      const client = new pg.Client({ connectionString: rig.urls.source });
      await client.connect();
      // Every load transaction numbered after this one's COMMIT returned committed after it.
      let lastBefore: number;
      try {
        await client.query('BEGIN');
        await client.query("UPDATE items SET version = version + 1, payload = 'poison' WHERE id = 7");
        await client.query('COMMIT');
        lastBefore = Number(
          (await client.query<{ n: string }>('SELECT last_value::text AS n FROM load_tx_id_seq')).rows[0]?.n,
        );
      } finally {
        await client.end();
      }
      const failed = await waitFor(
        async () => {
          const p = await rig.pipeline();
          return p?.state === 'failed' ? p : undefined;
        },
        'the pipeline to fail on the refused row',
        scale.drainTimeoutMs,
      );
      expect(failed.error).toContain('public.items');
      expect(failed.error).toContain('(id)=(7)');
      expect(failed.error).toContain('no_poison');
      await load.finished();
      // Nothing committed after the refused transaction was applied (the checkpoint stayed before
      // its commit: transactions that committed while it was open may be in), and the row is as it
      // was before.
      const [after] = await sqlOn<{ n: number }>(
        rig.urls.sink,
        'SELECT count(*)::int AS n FROM public.load_tx WHERE id > $1',
        [lastBefore],
      );
      expect(after?.n).toBe(0);
      const [row] = await sqlOn(rig.urls.sink, 'SELECT payload FROM public.items WHERE id = 7');
      expect(row?.payload).not.toBe('poison');
      expect(rig.sampler?.violations).toEqual([]);

      await sqlOn(rig.urls.sink, 'ALTER TABLE public.items DROP CONSTRAINT no_poison');
      expect(
        (await rig.service.request('PUT', `/v1/pipelines/${PIPELINE}/state`, { state: 'start' })).status,
      ).toBe(200);
      const result = await rig.drainAndCheck();
      await rig.waitHealthy();
      rig.note(`converged; ${result.committed} load transactions; ${result.samples} samples`);
    },
    scale.testTimeoutMs,
  );
});
