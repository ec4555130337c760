import pg from 'pg';
import { sqlOn, waitFor } from '../test/support/replication-fixture.js';
import type { Replication } from './replication.js';
import { slotOf, waitSlotInactive } from './source-slot.js';
import { BENCH_TABLE, BENCH_TABLE_DDL } from './workloads.js';

const NAME = 'bench_native';

/**
 * PostgreSQL's own logical replication of `BENCH_TABLE`: a publication on the source, a
 * subscription (default options) on the sink, returned once its initial copy is done.
 */
export async function createNativeSubscription(sourceUrl: string, sinkUrl: string): Promise<Replication> {
  await sqlOn(sourceUrl, `CREATE PUBLICATION ${NAME} FOR TABLE ${BENCH_TABLE}`);
  await sqlOn(sinkUrl, BENCH_TABLE_DDL);
  const conninfo = pg.escapeLiteral(sourceUrl);
  await sqlOn(
    sinkUrl,
    `CREATE SUBSCRIPTION ${NAME} CONNECTION ${conninfo} PUBLICATION ${NAME} WITH (copy_data = true)`,
  );
  await waitFor(async () => {
    const [row] = await sqlOn<{ total: number; ready: number }>(
      sinkUrl,
      `SELECT count(*)::int AS total, count(*) FILTER (WHERE r.srsubstate = 'r')::int AS ready
         FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid WHERE s.subname = $1`,
      [NAME],
    );
    return row !== undefined && row.total > 0 && row.ready === row.total;
  }, 'the native subscription to finish its initial copy');
  const slot = await slotOf(sourceUrl);
  return {
    name: 'native',
    sourceUrl,
    sinkUrl,
    slot,
    pause: async () => {
      await sqlOn(sinkUrl, `ALTER SUBSCRIPTION ${NAME} DISABLE`);
      await waitSlotInactive(sourceUrl, slot);
    },
    resume: async () => {
      await sqlOn(sinkUrl, `ALTER SUBSCRIPTION ${NAME} ENABLE`);
    },
  };
}

/** Drops the subscription (and with it the slot on the source) so the sink stops reconnecting. */
export async function dropNativeSubscription(sinkUrl: string): Promise<void> {
  await sqlOn(sinkUrl, `DROP SUBSCRIPTION IF EXISTS ${NAME}`);
}
