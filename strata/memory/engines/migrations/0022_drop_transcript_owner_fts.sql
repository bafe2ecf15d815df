-- The second keyword index over the transcript goes: `transcript_owner_fts` (migration 0003,
-- its triggers recreated by 0010) indexed each row's owner beside its words so a search could
-- intersect one owner's postings, but no query ever read it (transcript search reads
-- `transcript_fts` and filters by owner on `transcript`), while every append, delete and
-- prune wrote it: a second FTS5 entry per row. Dropping the table drops its shadow tables.
DROP TRIGGER transcript_owner_fts_insert;
DROP TRIGGER transcript_owner_fts_delete;
DROP TRIGGER transcript_owner_fts_update;
DROP TABLE transcript_owner_fts;
