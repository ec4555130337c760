-- Why a copied table's sink table no longer holds its copy (dropped, lost columns or emptied
-- outside the pipeline), set when the pipeline fails with SINK_TABLE_CHANGED and cleared by the
-- backfill that copies it again: its progress then shows it, never the 100 % of its old copy.
ALTER TABLE pipeline_tables ADD COLUMN sink_changed text;
