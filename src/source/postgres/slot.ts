import pg from 'pg';
import type { TableRef } from '../../core/change.js';
import { normalizeLsn } from '../../core/lsn.js';
import { surviveConnectionLoss } from '../../core/pg-connection-loss.js';
import { qualifiedName } from './catalog.js';
import { sqlState } from './errors.js';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `replicator_` + the pipeline UUID without dashes: a valid identifier of 43 characters. */
function ownedName(pipelineId: string): string {
  if (!UUID_PATTERN.test(pipelineId)) throw new Error(`pipeline id '${pipelineId}' is not a UUID`);
  return `replicator_${pipelineId.replaceAll('-', '').toLowerCase()}`;
}

/** Name of the replication slot the service owns for a pipeline. */
export function slotName(pipelineId: string): string {
  return ownedName(pipelineId);
}

/** Name of the publication the service owns for a pipeline. */
export function publicationName(pipelineId: string): string {
  return ownedName(pipelineId);
}

/**
 * Makes the publication `name` publish exactly `tables` (inserts, updates, deletes, truncates):
 * creates it if missing, else replaces its table list. ONLY keeps inheritance children out.
 */
export async function ensurePublication(
  client: pg.ClientBase,
  name: string,
  tables: readonly TableRef[],
): Promise<void> {
  if (tables.length === 0) throw new Error('a publication needs at least one table');
  const list = tables.map((t) => `ONLY ${qualifiedName(t)}`).join(', ');
  const pub = pg.escapeIdentifier(name);
  const { rows } = await client.query<{ every_op: boolean; same_tables: boolean }>(
    `SELECT p.pubinsert AND p.pubupdate AND p.pubdelete AND p.pubtruncate AS every_op,
        (SELECT coalesce(array_agg(pr.prrelid ORDER BY pr.prrelid), '{}') FROM pg_publication_rel pr
          WHERE pr.prpubid = p.oid)
        = (SELECT coalesce(array_agg(DISTINCT r ORDER BY r), '{}')
          FROM unnest($2::text[]) AS t(name), LATERAL (SELECT t.name::regclass::oid AS r) AS c) AS same_tables
      FROM pg_publication p WHERE p.pubname = $1`,
    [name, tables.map((t) => qualifiedName(t))],
  );
  const found = rows[0];
  if (!found) {
    try {
      await client.query(`CREATE PUBLICATION ${pub} FOR TABLE ${list}`);
      return;
    } catch (error) {
      // Created concurrently by another worker: fall through and align it.
      if (sqlState(error) !== '42710') throw error;
    }
  }
  // Only what differs is altered: every ALTER PUBLICATION makes each walsender reading it drop the
  // relations it knows (SET of its options, of every table), decode their shapes again and send
  // them to every pipeline of a shared stream.
  if (!found?.same_tables) await client.query(`ALTER PUBLICATION ${pub} SET TABLE ${list}`);
  if (!found?.every_op) {
    await client.query(`ALTER PUBLICATION ${pub} SET (publish = 'insert, update, delete, truncate')`);
  }
}

/** A freshly created slot whose exported snapshot stays usable until release(). */
export interface SlotWithSnapshot {
  /** The slot's consistent point: stream from here to get every change after the snapshot. */
  consistentPoint: string;
  /** Exported snapshot, for `SET TRANSACTION SNAPSHOT` in a REPEATABLE READ transaction. */
  snapshotName: string;
  /** Closes the replication connection, which ends the exported snapshot. */
  release(): Promise<void>;
}

/**
 * Creates the logical slot `slotName` (pgoutput) on a replication connection and exports its
 * snapshot. The connection stays open and idle until release(), as the snapshot lives only as
 * long as it. `source` is an ordinary connection's settings (the replication flag is added).
 */
export async function createSlotWithSnapshot(
  source: pg.ClientConfig,
  slotName: string,
): Promise<SlotWithSnapshot> {
  // pg supports `replication` but its type definitions do not declare it.
  const config: pg.ClientConfig & { replication: 'database' } = {
    ...source,
    application_name: 'replicator-slot',
    replication: 'database',
  };
  const client = new pg.Client(config);
  // A connection the server ends fails the call under way, not the process.
  surviveConnectionLoss(client);
  await client.connect();
  try {
    const { rows: version } = await client.query<{ server_version_num: string }>('SHOW server_version_num');
    const modern = Number(version[0]?.server_version_num) >= 150000;
    const slot = pg.escapeIdentifier(slotName);
    const command = modern
      ? `CREATE_REPLICATION_SLOT ${slot} LOGICAL pgoutput (SNAPSHOT 'export')`
      : `CREATE_REPLICATION_SLOT ${slot} LOGICAL pgoutput EXPORT_SNAPSHOT`;
    const { rows } = await client.query<{ consistent_point: string; snapshot_name: string }>(command);
    const row = rows[0];
    if (!row?.snapshot_name) throw new Error(`CREATE_REPLICATION_SLOT ${slotName} returned no snapshot`);
    let released = false;
    return {
      consistentPoint: normalizeLsn(row.consistent_point),
      snapshotName: row.snapshot_name,
      release: async () => {
        if (released) return;
        released = true;
        await client.end();
      },
    };
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }
}

/** State of a replication slot. */
export interface SlotStatus {
  exists: true;
  /** A walsender is streaming from it. */
  active: boolean;
  activePid: number | null;
  restartLsn: string | null;
  confirmedFlushLsn: string | null;
  /** PostgreSQL 13+: `reserved`, `extended`, `unreserved` or `lost` (lost = invalidated). */
  walStatus: string | null;
  /** WAL the slot keeps on the server, in bytes. */
  retainedWalBytes: number | null;
}

/** Reads the slot's state from `pg_replication_slots`; null when there is no such slot. */
export async function slotStatus(client: pg.ClientBase, slotName: string): Promise<SlotStatus | null> {
  const { rows: v } = await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
  const walStatus = Number(v[0]?.v) >= 130000 ? 'wal_status' : 'NULL::text';
  const { rows } = await client.query<{
    active: boolean;
    active_pid: number | null;
    restart_lsn: string | null;
    confirmed_flush_lsn: string | null;
    wal_status: string | null;
    retained: string | null;
  }>(
    `SELECT active, active_pid, restart_lsn::text, confirmed_flush_lsn::text, ${walStatus} AS wal_status,
            pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END,
                            restart_lsn)::text AS retained
       FROM pg_replication_slots
      WHERE slot_name = $1`,
    [slotName],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    exists: true,
    active: row.active,
    activePid: row.active_pid,
    restartLsn: row.restart_lsn,
    confirmedFlushLsn: row.confirmed_flush_lsn,
    walStatus: row.wal_status,
    retainedWalBytes: row.retained === null ? null : Number(row.retained),
  };
}

/**
 * Where the server's WAL ends (a standby: what it replayed) and where each of `slotNames` stands,
 * in one statement; a slot that does not exist is absent. `wal_status` (PostgreSQL 13+) is read
 * through the row's JSON so that one statement serves every version.
 */
export async function slotPositions(
  client: pg.ClientBase,
  slotNames: readonly string[],
): Promise<{
  walEnd: string;
  slots: Map<string, Omit<SlotStatus, 'exists' | 'active' | 'activePid' | 'restartLsn'>>;
}> {
  const { rows } = await client.query<{
    wal_end: string;
    slot_name: string | null;
    confirmed_flush_lsn: string | null;
    wal_status: string | null;
    retained: string | null;
  }>(
    `WITH e AS (SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_flush_lsn() END AS lsn)
     SELECT e.lsn::text AS wal_end, s.slot_name::text, s.confirmed_flush_lsn::text,
            to_jsonb(s)->>'wal_status' AS wal_status, pg_wal_lsn_diff(e.lsn, s.restart_lsn)::text AS retained
       FROM e LEFT JOIN pg_replication_slots s ON s.slot_name = ANY($1::text[])`,
    [slotNames],
  );
  const slots = new Map<string, Omit<SlotStatus, 'exists' | 'active' | 'activePid' | 'restartLsn'>>();
  for (const row of rows) {
    if (row.slot_name === null) continue;
    slots.set(row.slot_name, {
      confirmedFlushLsn: row.confirmed_flush_lsn,
      walStatus: row.wal_status,
      retainedWalBytes: row.retained === null ? null : Math.max(0, Number(row.retained)),
    });
  }
  return { walEnd: rows[0]?.wal_end ?? '0/0', slots };
}

/** Ends the walsender streaming from the slot, and waits (5 s at most) for the slot to be free. */
export async function endSlotReader(client: pg.ClientBase, slotName: string, pid: number): Promise<void> {
  await client.query('SELECT pg_terminate_backend($1)', [pid]);
  for (let i = 0; i < 50; i++) {
    if (!(await slotStatus(client, slotName))?.active) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Drops the pipeline's publication and slot if they exist, terminating a walsender still
 * streaming from the slot. Idempotent.
 */
export async function dropSlotAndPublication(
  client: pg.ClientBase,
  pipelineId: string,
  timeoutMs = 10_000,
): Promise<void> {
  await dropSlotAndPublicationNamed(client, slotName(pipelineId), publicationName(pipelineId), timeoutMs);
}

/** As dropSlotAndPublication, for a slot and a publication given by name (a shared stream's). */
export async function dropSlotAndPublicationNamed(
  client: pg.ClientBase,
  slot: string,
  publication: string,
  timeoutMs = 10_000,
): Promise<void> {
  await client.query(`DROP PUBLICATION IF EXISTS ${pg.escapeIdentifier(publication)}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await client.query<{ active_pid: number | null }>(
      'SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1',
      [slot],
    );
    if (rows.length === 0) return;
    const pid = rows[0]?.active_pid;
    if (pid) await client.query('SELECT pg_terminate_backend($1)', [pid]);
    try {
      await client.query('SELECT pg_drop_replication_slot($1)', [slot]);
      return;
    } catch (error) {
      const state = sqlState(error);
      if (state === '42704') return; // dropped meanwhile
      // 55006: still active, the terminated walsender has not exited yet.
      if (state !== '55006' || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
