import { type CommonQueryMethods, sql } from 'slonik';

/**
 * The store's side of a resync: what is recorded when one is accepted, and its flag, which the
 * next run of the pipeline reads to drop the old slot, create a new one and copy every table.
 */
export const resyncStore = {
  /**
   * Records an accepted resync, in the caller's transaction: the flag, every table (but those
   * dropped at the source) pending again
   * with its progress and partition plan forgotten, the service-kept sink checkpoint moved back to
   * the start (its fencing epoch kept), and a run of outcome `resync` in the history. The
   * pipeline's counters are left as they are.
   */
  record: async (db: CommonQueryMethods, pipelineId: string, projectId: string) => {
    // The last checkpoint shown is the old slot's until the new one has its own.
    await db.query(sql.unsafe`UPDATE pipelines SET resync_requested_at = now(), last_checkpoint_lsn = NULL,
        updated_at = now()
      WHERE id = ${pipelineId}`);
    await db.query(sql.unsafe`DELETE FROM snapshot_partitions WHERE pipeline_id = ${pipelineId}`);
    // A table dropped at the source stays so: there is nothing to copy (a backfill brings it back).
    await db.query(sql.unsafe`UPDATE pipeline_tables SET status = 'pending', partitions_total = 0,
        partitions_done = 0, rows_total = 0, rows_done = 0, snapshot_started_at = NULL, snapshot_done_at = NULL
      WHERE pipeline_id = ${pipelineId} AND status <> 'dropped'`);
    // The new slot's positions may be lower than the old ones (a source restored from a backup):
    // a checkpoint that only moves forward must start again from nothing.
    await db.query(sql.unsafe`UPDATE sink_checkpoints SET lsn = '0/0', detail = '{}', updated_at = now()
      WHERE pipeline_id = ${pipelineId}`);
    await db.query(sql.unsafe`DELETE FROM sink_partitions_done WHERE pipeline_id = ${pipelineId}`);
    await db.query(sql.unsafe`INSERT INTO pipeline_runs (pipeline_id, project_id, ended_at, outcome, error)
      VALUES (${pipelineId}, ${projectId}, now(), 'resync', NULL)`);
  },

  /** Whether a resync waits for the pipeline's next run. */
  requested: (db: CommonQueryMethods, pipelineId: string) =>
    db.exists(
      sql.unsafe`SELECT 1 FROM pipelines WHERE id = ${pipelineId} AND resync_requested_at IS NOT NULL`,
    ),

  /** The new slot exists: the resync is under way, and a later run resumes its copy as any other. */
  done: (db: CommonQueryMethods, pipelineId: string) =>
    db.query(sql.unsafe`UPDATE pipelines SET resync_requested_at = NULL WHERE id = ${pipelineId}`),
};
