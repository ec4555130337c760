-- A streaming table whose rows a repair (or a verification's comparison at one source position)
-- is writing: its changes are held past the position acknowledged to the source meanwhile, so a
-- data plane that starts and finds it set copies the table whole, as a backfill.
ALTER TABLE pipeline_tables ADD COLUMN repairing boolean NOT NULL DEFAULT false;
