-- Verifications of a pipeline's sink against its source, and their repairs. One at a time per
-- pipeline: the partial unique index refuses a second queued or running one, whatever instance
-- is asked. The differing keys are kept (bounded by the verifier) for a repair to copy again.
CREATE TABLE verifications (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  pipeline_id uuid NOT NULL REFERENCES pipelines (id) ON DELETE CASCADE,
  status text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
  result text CHECK (result IN ('matched', 'differs', 'not_verified')),
  tables_requested text[] NOT NULL,
  tables jsonb NOT NULL DEFAULT '[]',
  differing_keys jsonb NOT NULL DEFAULT '{}',
  rows_read bigint NOT NULL DEFAULT 0,
  source_share double precision NOT NULL,
  trigger text NOT NULL CHECK (trigger IN ('request', 'schedule', 'repair')),
  repair_of uuid REFERENCES verifications (id) ON DELETE SET NULL,
  repair_status text CHECK (repair_status IN ('queued', 'running', 'completed', 'failed')),
  repair_error text,
  repaired_by uuid,
  error text,
  worker_id uuid,
  cancel_requested boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz
);
CREATE INDEX verifications_pipeline_idx ON verifications (pipeline_id, created_at DESC);
CREATE UNIQUE INDEX verifications_one_active ON verifications (pipeline_id) WHERE status IN ('queued', 'running');
