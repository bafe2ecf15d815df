-- Episode keyword search ranks its matches with ts_rank_cd, which needs each match's
-- tsvector. With only an expression index, to_tsvector ran over every matching summary in
-- every search: 21 ms of a 58 ms recall at 500 episodes per person (docs/benchmarks.md).
-- A stored generated column computes it once per write, and the index is built on it.
-- Generated columns are left out of `Dialect.table_columns`, so `strata db copy`, `/link`
-- and the export never read or write it: it is PostgreSQL's own, like its indexes.
ALTER TABLE episodes ADD COLUMN words tsvector
    GENERATED ALWAYS AS (to_tsvector('english', summary || ' ' || key_terms)) STORED;
DROP INDEX episodes_words;
CREATE INDEX episodes_words ON episodes USING gin (words);
