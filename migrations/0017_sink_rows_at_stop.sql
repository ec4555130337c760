-- Whether each copied table's sink table held rows when the pipeline's data plane last ended
-- cleanly (null: not known, e.g. while it runs or after a crash). A start that finds it empty
-- while it held rows then knows it was emptied outside the pipeline, which wrote nothing meanwhile.
ALTER TABLE pipeline_tables ADD COLUMN sink_had_rows boolean;
