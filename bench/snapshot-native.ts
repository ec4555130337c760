import pg from 'pg';
import { sqlOn } from '../test/support/replication-fixture.js';
import { secondsUntil } from './poll.js';
import { SNAPSHOT_TABLE } from './snapshot-table.js';

const NAME = 'bench_snapshot_native';

/**
 * PostgreSQL's own initial copy: a publication of the table on the source, then
 * `CREATE SUBSCRIPTION ... WITH (copy_data = true)` (otherwise default options) on the sink, which
 * holds the empty table. Times from CREATE SUBSCRIPTION until `pg_subscription_rel` shows the table
 * synchronised (`s`) or ready (`r`) and the sink holds `rows` rows; then drops both again.
 */
export async function nativeSnapshot(
  sourceUrl: string,
  sinkUrl: string,
  rows: number,
  timeoutMs: number,
): Promise<number> {
  await sqlOn(sourceUrl, `CREATE PUBLICATION ${NAME} FOR TABLE ${SNAPSHOT_TABLE}`);
  const sink = new pg.Client({ connectionString: sinkUrl });
  await sink.connect();
  try {
    const started = performance.now();
    await sink.query(
      `CREATE SUBSCRIPTION ${NAME} CONNECTION ${pg.escapeLiteral(sourceUrl)} PUBLICATION ${NAME} ` +
        'WITH (copy_data = true)',
    );
    try {
      // The copy commits together with the state 'f', so once the state is past it the rows are
      // visible: the time is taken when the state is seen, and the count (a scan of the whole
      // table) only confirms it, unless it does not match yet.
      let syncedAt: number | undefined;
      let countedEarly = false;
      const seconds = await secondsUntil(
        started,
        async () => {
          if (syncedAt === undefined) {
            const { rows: states } = await sink.query<{ state: string }>(
              `SELECT r.srsubstate::text AS state FROM pg_subscription_rel r
                 JOIN pg_subscription s ON s.oid = r.srsubid WHERE s.subname = $1`,
              [NAME],
            );
            if (states.length === 0 || !states.every((s) => s.state === 'r' || s.state === 's')) return false;
            syncedAt = performance.now();
          }
          const { rows: counted } = await sink.query<{ n: string }>(
            `SELECT count(*) AS n FROM ${SNAPSHOT_TABLE}`,
          );
          if (Number(counted[0]?.n) === rows) return true;
          countedEarly = true; // then the time is that of the count that matches
          return false;
        },
        'the native subscription to copy the table',
        timeoutMs,
      );
      return syncedAt !== undefined && !countedEarly ? (syncedAt - started) / 1000 : seconds;
    } finally {
      // Drops the slot on the source too; the sink keeps the table for the check that follows.
      await sink.query(`DROP SUBSCRIPTION ${NAME}`);
    }
  } finally {
    await sink.end();
    await sqlOn(sourceUrl, `DROP PUBLICATION ${NAME}`);
  }
}
