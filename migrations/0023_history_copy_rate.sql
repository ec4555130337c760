-- The rows a pipeline copied (snapshot or backfill, all tables) a second, mean of each point's
-- seconds: copied rows are not events, so the throughput alone stays at 0 during a copy.
ALTER TABLE pipeline_history ADD COLUMN copy_rows_per_second double precision NOT NULL DEFAULT 0;
