-- How a pipeline meets a source table's change of shape: review (default), auto or ignore.
ALTER TABLE pipelines ADD COLUMN schema_policy text NOT NULL DEFAULT 'review'
  CHECK (schema_policy IN ('review', 'auto', 'ignore'));

-- The shape of each table as the sink has it (a TableSchema), and the shape last seen at the source
-- that the sink does not follow (ignored or rejected), so that the same change is not raised twice.
ALTER TABLE pipeline_tables
  ADD COLUMN known_schema jsonb,
  ADD COLUMN source_schema jsonb;

CREATE TABLE schema_proposals (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id uuid NOT NULL REFERENCES projects (id),
  pipeline_id uuid NOT NULL REFERENCES pipelines (id) ON DELETE CASCADE,
  table_name text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected', 'applied')),
  -- {current, proposed, changes, ddl}
  proposal jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  decided_at timestamptz,
  decided_by text
);

CREATE UNIQUE INDEX schema_proposals_one_pending ON schema_proposals (pipeline_id) WHERE status = 'pending';
