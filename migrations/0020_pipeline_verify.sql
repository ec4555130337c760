-- A pipeline's verification schedule (`verify.interval`, off when absent) and the share of the
-- source's time its verifications may take (`verify.source_share`).
ALTER TABLE pipelines ADD COLUMN verify_options jsonb NOT NULL DEFAULT '{}';
