-- Replication slots a forced pipeline delete left on a source it could not reach: kept so that the
-- source connection's view names them until they are dropped (each holds the source's WAL). By
-- connection name, as pipelines name their connections; the pipeline's id names what it owned.
CREATE TABLE orphaned_slots (
  project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  connection_name text NOT NULL,
  slot_name text NOT NULL,
  pipeline_id uuid NOT NULL,
  pipeline_name text NOT NULL,
  reason text NOT NULL,
  drop_statement text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, connection_name, slot_name)
);
