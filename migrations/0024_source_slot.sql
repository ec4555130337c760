-- How a pipeline reads its source's changes: 'shared', from the one slot its source connection's
-- pipelines share (one walsender per source database), or 'own', from a slot of its own. Every
-- pipeline made before the shared stream existed has a slot of its own, and keeps it.
ALTER TABLE pipelines ADD COLUMN source_slot text NOT NULL DEFAULT 'own'
  CHECK (source_slot IN ('shared', 'own'));

-- Set when the pipeline's shared stream let it go (it held more WAL than allowed while it did not
-- read, or the stream's slot was made again): what it missed is gone from the source, and its next
-- start copies its tables again, then clears it.
ALTER TABLE pipelines ADD COLUMN stream_released_at timestamptz;

-- Where a pipeline of a shared stream needs the stream from, as the stream last noted it (a
-- position it acknowledged, or claimed at its start): the slot is never acknowledged past it, so
-- an instance taking the stream over after a crash holds what every pipeline still needs.
ALTER TABLE pipelines ADD COLUMN stream_position text;
