-- Keyword search over episodes and facts ranks its matches with ts_rank_cd, which needs each
-- match's tsvector. With only expression indexes, to_tsvector ran over every matching text in
-- every search: for episodes 21 ms of a 58 ms recall at 500 episodes per person
-- (docs/benchmarks.md). A stored generated column computes it once per write, and the index
-- is built on it. Generated columns are left out of `Dialect.table_columns`, so `strata db
-- copy`, `/link` and the export never read or write them: they are PostgreSQL's own, like
-- its indexes.
ALTER TABLE episodes ADD COLUMN words tsvector
    GENERATED ALWAYS AS (to_tsvector('english', summary || ' ' || key_terms)) STORED;
DROP INDEX episodes_words;
CREATE INDEX episodes_words ON episodes USING gin (words);

ALTER TABLE facts ADD COLUMN words tsvector
    GENERATED ALWAYS AS (to_tsvector('english', text || ' ' || replace(attribute, '_', ' ')))
    STORED;
DROP INDEX facts_words;
CREATE INDEX facts_words ON facts USING gin (words);
