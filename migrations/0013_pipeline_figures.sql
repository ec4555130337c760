-- The live figures of each pipeline as the instance running it last measured them: lag, WAL
-- behind, retained WAL and throughput are measured where a pipeline runs, and every instance of a
-- fleet answers the API with them. The lag is read as `lag_ms` plus the time since `measured_at`
-- (the store's clock, so that no two instances' clocks are compared), so it keeps growing when
-- its owner stops measuring.
CREATE TABLE pipeline_figures (
  pipeline_id uuid PRIMARY KEY REFERENCES pipelines (id) ON DELETE CASCADE,
  lag_ms bigint NOT NULL,
  lag_bytes bigint,
  retained_wal_bytes bigint,
  events_per_second double precision NOT NULL,
  measured_at timestamptz NOT NULL
);
