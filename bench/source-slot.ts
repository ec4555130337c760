import { sqlOn, waitFor } from '../test/support/replication-fixture.js';

/** The single logical slot of the source database (each system has a source database of its own). */
export async function slotOf(sourceUrl: string): Promise<string> {
  const slot = await waitFor(
    async () => {
      const rows = await sqlOn<{ slot_name: string }>(
        sourceUrl,
        "SELECT slot_name FROM pg_replication_slots WHERE database = current_database() AND slot_type = 'logical'",
      );
      return rows.length === 1 ? rows[0]?.slot_name : undefined;
    },
    `one logical slot on ${new URL(sourceUrl).pathname}`,
  );
  return slot as string;
}

/** Waits until no walsender uses the slot, so a paused system costs the source nothing. */
export async function waitSlotInactive(sourceUrl: string, slot: string): Promise<void> {
  await waitFor(
    async () =>
      (
        await sqlOn<{ active: boolean }>(
          sourceUrl,
          'SELECT active FROM pg_replication_slots WHERE slot_name = $1',
          [slot],
        )
      )[0]?.active === false,
    `slot ${slot} to be released`,
    30_000,
  );
}

/** The source's current WAL write position. */
export async function currentWalLsn(sourceUrl: string): Promise<string> {
  const [row] = await sqlOn<{ lsn: string }>(sourceUrl, 'SELECT pg_current_wal_lsn()::text AS lsn');
  return row?.lsn as string;
}

/**
 * Waits until the slot has confirmed `lsn`, so a later resume decodes only the backlog and not
 * the WAL the other system's runs left behind. Returns false on timeout: a slot that lags makes
 * the next run a little pessimistic, it does not make it wrong.
 */
export async function waitSlotConfirmed(
  sourceUrl: string,
  slot: string,
  lsn: string,
  timeoutMs = 30_000,
): Promise<boolean> {
  try {
    await waitFor(
      async () =>
        (
          await sqlOn<{ done: boolean }>(
            sourceUrl,
            'SELECT confirmed_flush_lsn >= $2::pg_lsn AS done FROM pg_replication_slots WHERE slot_name = $1',
            [slot, lsn],
          )
        )[0]?.done === true,
      `slot ${slot} to confirm ${lsn}`,
      timeoutMs,
    );
    return true;
  } catch {
    return false;
  }
}
