import { CHECKPOINTS_TABLE, PARTITIONS_TABLE, qualifiedName } from './ddl.js';
import { duplicateKeyUpdate, type UpsertStyle } from './server-dialect.js';

/** The statements of the sink's own tables in `database`, upserts in the server's style. */
export function bookkeepingSql(database: string, style: UpsertStyle) {
  const checkpoints = qualifiedName({ schema: database, table: CHECKPOINTS_TABLE });
  const partitions = qualifiedName({ schema: database, table: PARTITIONS_TABLE });
  return {
    readCheckpoint: `SELECT lsn, CAST(epoch AS CHAR) AS epoch FROM ${checkpoints} WHERE pipeline_id = ? AND lsn IS NOT NULL`,
    // Locks the checkpoint row for the batch's transaction: an older worker waits for a newer
    // one's batch, then sees its epoch and is fenced off.
    lockCheckpoint: `SELECT CAST(epoch AS CHAR) AS epoch, lsn FROM ${checkpoints} WHERE pipeline_id = ? FOR UPDATE`,
    storeCheckpoint:
      `INSERT INTO ${checkpoints} (pipeline_id, lsn, epoch, updated_at) VALUES (?, ?, ?, UTC_TIMESTAMP(6))` +
      duplicateKeyUpdate(style, ['lsn', 'epoch', 'updated_at']),
    markPartition:
      `INSERT INTO ${partitions} (pipeline_id, table_name, partition_id, row_count, done_at) ` +
      `VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6))${duplicateKeyUpdate(style, ['row_count', 'done_at'])}`,
    partitionsDone: `SELECT table_name, partition_id FROM ${partitions} WHERE pipeline_id = ? ORDER BY table_name, partition_id`,
    forgetPartitions: `DELETE FROM ${partitions} WHERE pipeline_id = ? AND table_name = ?`,
  };
}
