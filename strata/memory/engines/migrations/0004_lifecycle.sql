-- Life cycle: a compaction row records the last transcript row its summary covers, so rows
-- appended while the summary was being written stay above the watermark; a partial index
-- finds a channel's newest compaction without scanning its messages.

ALTER TABLE transcript ADD COLUMN covers_to INTEGER;

CREATE INDEX transcript_compactions ON transcript (channel_id, id) WHERE kind = 'compaction';
