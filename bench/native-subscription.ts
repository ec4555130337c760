import pg from 'pg';
import { sqlOn, waitFor } from '../test/support/replication-fixture.js';
import type { Replication } from './replication.js';
import { slotOf, waitSlotInactive } from './source-slot.js';
import { BENCH_TABLE, BENCH_TABLE_DDL } from './workloads.js';

/** The subscription's `streaming` option: off (the default up to PostgreSQL 17) or parallel apply. */
export type NativeStreaming = 'off' | 'parallel';

/** A native system of the report: the subscription with one `streaming` setting. */
export const nativeName = (streaming: NativeStreaming) => `native (streaming = ${streaming})`;

/**
 * PostgreSQL's own logical replication of `BENCH_TABLE`: a publication on the source, a
 * subscription `name` on the sink (`copy_data = true`, `streaming = off`, otherwise defaults),
 * returned once its initial copy is done, as the system `native (streaming = off)`.
 */
export async function createNativeSubscription(
  sourceUrl: string,
  sinkUrl: string,
  name = 'bench_native',
): Promise<Replication> {
  await sqlOn(sourceUrl, `CREATE PUBLICATION ${name} FOR TABLE ${BENCH_TABLE}`);
  await sqlOn(sinkUrl, BENCH_TABLE_DDL);
  const conninfo = pg.escapeLiteral(sourceUrl);
  await sqlOn(
    sinkUrl,
    `CREATE SUBSCRIPTION ${name} CONNECTION ${conninfo} PUBLICATION ${name} WITH (copy_data = true, streaming = off)`,
  );
  await waitFor(async () => {
    const [row] = await sqlOn<{ total: number; ready: number }>(
      sinkUrl,
      `SELECT count(*)::int AS total, count(*) FILTER (WHERE r.srsubstate = 'r')::int AS ready
         FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid WHERE s.subname = $1`,
      [name],
    );
    return row !== undefined && row.total > 0 && row.ready === row.total;
  }, 'the native subscription to finish its initial copy');
  const slot = await slotOf(sourceUrl);
  return {
    name: nativeName('off'),
    sourceUrl,
    sinkUrl,
    slot,
    prepare: () => setStreaming(sinkUrl, name, 'off'),
    pause: async () => {
      await sqlOn(sinkUrl, `ALTER SUBSCRIPTION ${name} DISABLE`);
      await waitSlotInactive(sourceUrl, slot);
    },
    resume: async () => {
      await sqlOn(sinkUrl, `ALTER SUBSCRIPTION ${name} ENABLE`);
    },
  };
}

const setStreaming = (sinkUrl: string, name: string, streaming: NativeStreaming) =>
  sqlOn(sinkUrl, `ALTER SUBSCRIPTION ${name} SET (streaming = ${streaming})`).then(() => undefined);

/**
 * The same subscription with `streaming = parallel` (PostgreSQL 16+ on both sides): a transaction
 * beyond `logical_decoding_work_mem` is sent in pieces before its commit and applied as they come
 * by a parallel apply worker, then committed. Set while the subscription is disabled, before each
 * drain of this system; the other system sets `off` back.
 */
export function withParallelStreaming(native: Replication, name = 'bench_native'): Replication {
  return {
    ...native,
    name: nativeName('parallel'),
    prepare: () => setStreaming(native.sinkUrl, name, 'parallel'),
  };
}

/** Drops the subscription (and with it the slot on the source) so the sink stops reconnecting. */
export async function dropNativeSubscription(sinkUrl: string, name = 'bench_native'): Promise<void> {
  await sqlOn(sinkUrl, `DROP SUBSCRIPTION IF EXISTS ${name}`);
}
