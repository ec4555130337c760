-- The snapshot each partition was (or is being) copied in, when it was exported while the slot
-- already existed: the stream then replays changes that copy already holds, and skips them by it.
-- NULL for a new slot's own snapshot, which sees nothing its stream carries.
ALTER TABLE snapshot_partitions
  ADD COLUMN copied_in_visibility text,
  ADD COLUMN copied_in_lsn text;
