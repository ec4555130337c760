-- Bookkeeping of a sink that has no storage of its own to keep it next to the data (a broker, a
-- webhook): the position delivered up to, under the writer's fencing epoch, and the snapshot
-- partitions delivered whole. A sink that stores its own (a database) never writes here.
CREATE TABLE sink_checkpoints (
  pipeline_id uuid PRIMARY KEY REFERENCES pipelines (id) ON DELETE CASCADE,
  lsn pg_lsn NOT NULL,
  epoch integer NOT NULL,
  -- The sink's own progress within a transaction delivered in pieces.
  detail jsonb NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sink_partitions_done (
  pipeline_id uuid NOT NULL REFERENCES pipelines (id) ON DELETE CASCADE,
  schema_name text NOT NULL,
  table_name text NOT NULL,
  partition_id text NOT NULL,
  done_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (pipeline_id, schema_name, table_name, partition_id)
);
