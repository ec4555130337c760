import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlOn, waitFor } from '../support/replication-fixture.js';
import { FaultRig, PIPELINE } from './support/fault-rig.js';
import { scale } from './support/scale.js';

/**
 * Scenario 9: one transaction of millions of rows (5,000,000 at full scale), killed with SIGKILL
 * while the sink takes it in pieces, then started again. The source sends the transaction again
 * whole; the service spools it to disk rather than holding it, so its memory does not grow with
 * the transaction; it is applied once (the sink equals the source, no row version goes back) and
 * counted once in `events_total`; and the spool the killed process left is removed.
 */
describe('fault 9: a transaction of millions of rows killed mid-apply', () => {
  let rig: FaultRig;
  const rows = scale.bigTransactionRows;
  const seed = 1_000;
  // A transaction held in memory would need gigabytes: a bound far below that, above what the
  // service process (run from the sources, through tsx) holds at rest and per batch.
  const memoryBoundMiB = 450;
  const timeoutMs = Math.max(scale.testTimeoutMs, Math.ceil(rows / 2_000) * 1_000);

  beforeAll(async () => {
    rig = await FaultRig.start('bigtx', { seedRows: seed });
    await rig.startPipeline();
    await rig.waitForPhase('streaming');
  }, scale.testTimeoutMs);
  afterAll(() => rig?.dispose());

  const eventsTotal = async () =>
    Number((await rig.service.request('GET', `/v1/pipelines/${PIPELINE}/metrics`)).body.events_total);
  const sinkItems = async () =>
    (await sqlOn<{ n: number }>(rig.urls.sink, 'SELECT count(*)::int AS n FROM public.items'))[0]?.n ?? 0;

  it(
    'replays it whole after the kill, once, in bounded memory',
    async () => {
      const before = await eventsTotal();
      // One transaction, committed before the pipeline takes any of it.
      await sqlOn(
        rig.urls.source,
        `INSERT INTO items SELECT g, 0, md5(g::text) FROM generate_series(${seed + 1}, ${seed + rows}) g`,
      );
      rig.note(`committed one transaction of ${rows} rows`);
      const spoolRoot = join(rig.service.dataDir, 'spool');
      const firstPid = rig.service.pid;
      // Killed once the sink holds part of it: a transaction larger than a batch is written in
      // pieces, or, streamed by the source, into a sink transaction held open until its commit.
      const part = await waitFor(
        async () => {
          const n = (await sinkItems()) - seed;
          if (n >= rows / 10) return n;
          const [held] = await sqlOn<{ n: number }>(
            rig.urls.sink,
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE application_name = 'replicator-sink-streamed' AND backend_xid IS NOT NULL`,
          );
          return (held?.n ?? 0) > 0 ? `${n} committed and more held` : undefined;
        },
        'a part of the transaction in the sink',
        timeoutMs,
        100,
      );
      const firstPeak = rig.service.peakRssMiB();
      await rig.service.kill();
      rig.note(
        `killed with ${part} of ${rows} rows in the sink; that process peaked at ${firstPeak.toFixed(0)} MiB`,
      );
      await rig.service.start();
      // The spool of the killed process is gone once the new one has started.
      const leftover = existsSync(spoolRoot)
        ? readdirSync(spoolRoot).filter((d) => d.includes(`_${firstPid}_`))
        : [];
      expect(leftover).toEqual([]);
      const result = await rig.drainAndCheck(timeoutMs);
      await waitFor(
        async () => (await eventsTotal()) >= before + rows,
        'events_total to count the transaction',
        timeoutMs,
      );
      expect(await eventsTotal()).toBe(before + rows);
      const peak = rig.service.peakRssMiB();
      rig.note(
        `replayed whole and counted once; the replaying process peaked at ${peak.toFixed(0)} MiB; ${result.samples} samples`,
      );
      expect(firstPeak).toBeLessThan(memoryBoundMiB);
      expect(peak).toBeLessThan(memoryBoundMiB);
    },
    timeoutMs * 3,
  );
});
