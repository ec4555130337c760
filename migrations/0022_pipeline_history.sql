-- A pipeline's figures over time, for the dashboard's charts: one row per pipeline every 10
-- seconds while an instance runs it (the peak lag and the mean throughput of those seconds),
-- kept 48 hours. About 17,000 rows a pipeline at most.
CREATE TABLE pipeline_history (
  pipeline_id uuid NOT NULL REFERENCES pipelines (id) ON DELETE CASCADE,
  at timestamptz NOT NULL,
  state text NOT NULL,
  phase text NOT NULL,
  events_per_second double precision NOT NULL,
  lag_ms bigint NOT NULL,
  lag_bytes bigint,
  sink_errors bigint NOT NULL,
  PRIMARY KEY (pipeline_id, at)
);
CREATE INDEX pipeline_history_at_idx ON pipeline_history (at);
