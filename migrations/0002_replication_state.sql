-- Per table of a pipeline: where its initial copy stands. A table is streamed once its snapshot is done.
CREATE TABLE pipeline_tables (
  pipeline_id uuid NOT NULL REFERENCES pipelines (id) ON DELETE CASCADE,
  project_id uuid NOT NULL REFERENCES projects (id),
  table_name text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'snapshot', 'streaming')),
  partitions_total integer NOT NULL DEFAULT 0,
  partitions_done integer NOT NULL DEFAULT 0,
  -- An estimate from the source's statistics until the copy is done.
  rows_total bigint NOT NULL DEFAULT 0,
  rows_done bigint NOT NULL DEFAULT 0,
  snapshot_started_at timestamptz,
  snapshot_done_at timestamptz,
  PRIMARY KEY (pipeline_id, table_name)
);

-- The partition plan of each table's snapshot, kept so that a resumed snapshot copies the same ranges.
CREATE TABLE snapshot_partitions (
  pipeline_id uuid NOT NULL REFERENCES pipelines (id) ON DELETE CASCADE,
  table_name text NOT NULL,
  partition_id text NOT NULL,
  lower_bound text,
  upper_bound text,
  rows_done bigint,
  done_at timestamptz,
  PRIMARY KEY (pipeline_id, table_name, partition_id),
  FOREIGN KEY (pipeline_id, table_name) REFERENCES pipeline_tables (pipeline_id, table_name) ON DELETE CASCADE
);

ALTER TABLE pipelines
  ADD COLUMN events_total bigint NOT NULL DEFAULT 0,
  ADD COLUMN sink_errors_total bigint NOT NULL DEFAULT 0,
  ADD COLUMN last_checkpoint_lsn text,
  -- Set once the pipeline created its publication (and later slot) on the source: deleting it must drop them.
  ADD COLUMN source_prepared_at timestamptz;
