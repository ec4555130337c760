-- A resync asked for and not yet carried out: the next run of the pipeline drops its slot (if it
-- still exists), creates a new one and copies every table again. Cleared once the new slot exists.
ALTER TABLE pipelines ADD COLUMN resync_requested_at timestamptz;
