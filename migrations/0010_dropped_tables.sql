-- A table of a pipeline that no longer exists at the source under its name (dropped, or renamed):
-- kept in the definition until a person removes or backfills it, with why and when it was seen.
ALTER TABLE pipeline_tables DROP CONSTRAINT pipeline_tables_status_check;
ALTER TABLE pipeline_tables ADD CONSTRAINT pipeline_tables_status_check
  CHECK (status IN ('pending', 'snapshot', 'streaming', 'backfill', 'dropped'));
ALTER TABLE pipeline_tables
  ADD COLUMN dropped_reason text,
  ADD COLUMN dropped_at timestamptz;
