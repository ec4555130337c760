-- Fleet: each pipeline that should run is owned by one worker at a time through a lease. The epoch
-- grows with every new owner and is written with each sink checkpoint, so an old owner that lost
-- its lease (a paused "zombie") is refused by the sink.
ALTER TABLE pipelines
  ADD COLUMN owner_worker_id uuid,
  ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0,
  ADD COLUMN lease_expires_at timestamptz,
  -- An action asked for on an instance that does not own the pipeline, for its owner to carry out.
  ADD COLUMN pending_action text;

CREATE INDEX pipelines_owner_idx ON pipelines (owner_worker_id);
