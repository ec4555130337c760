-- Per pipeline: how its snapshots are cut and copied ({"parallelism": n, "partition_rows": n}; empty = defaults).
ALTER TABLE pipelines ADD COLUMN snapshot_options jsonb NOT NULL DEFAULT '{}'::jsonb;

-- A backfill asked for through the API: the table is copied again while the others keep streaming.
ALTER TABLE pipeline_tables DROP CONSTRAINT pipeline_tables_status_check;
ALTER TABLE pipeline_tables ADD CONSTRAINT pipeline_tables_status_check
  CHECK (status IN ('pending', 'snapshot', 'streaming', 'backfill'));
