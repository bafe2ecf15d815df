-- Small vec0 chunks. A vec0 partition (one per owner) allocates a whole chunk even for one
-- vector, and the default chunk is 1,024 vectors: about 3 MB of zeros per person and table at
-- 768 dimensions, so a bot with many quiet people was mostly empty chunks. A chunk of 8
-- vectors costs one person with a message about 24 KB per table at 768-d (12 KB at 384-d);
-- a person with 10,000 vectors scans 1,250 chunks instead of 10, which the memory-mapped
-- reads of `memory.db` pay for (docs/living-memory.md has the measurements).
--
-- vec0 cannot change its chunk size in place: each table is copied out, recreated and filled
-- again with the same rowids (the ids of the transcript rows, episodes and facts the triggers
-- and queries join on), owner by owner so each partition's chunks are filled in order.

CREATE TABLE transcript_vec_0009 AS SELECT row_id, owner_id, embedding FROM transcript_vec;
DROP TABLE transcript_vec;
CREATE VIRTUAL TABLE transcript_vec USING vec0 (
    row_id INTEGER PRIMARY KEY,
    owner_id INTEGER PARTITION KEY,
    embedding FLOAT[$DIM] distance_metric = cosine,
    chunk_size = 8
);
INSERT INTO transcript_vec (row_id, owner_id, embedding)
    SELECT row_id, owner_id, embedding FROM transcript_vec_0009 ORDER BY owner_id, row_id;
DROP TABLE transcript_vec_0009;

CREATE TABLE episode_vec_0009 AS SELECT episode_id, owner_id, embedding FROM episode_vec;
DROP TABLE episode_vec;
CREATE VIRTUAL TABLE episode_vec USING vec0 (
    episode_id INTEGER PRIMARY KEY,
    owner_id INTEGER PARTITION KEY,
    embedding FLOAT[$DIM] distance_metric = cosine,
    chunk_size = 8
);
INSERT INTO episode_vec (episode_id, owner_id, embedding)
    SELECT episode_id, owner_id, embedding FROM episode_vec_0009 ORDER BY owner_id, episode_id;
DROP TABLE episode_vec_0009;

CREATE TABLE fact_vec_0009 AS SELECT fact_id, owner_id, embedding FROM fact_vec;
DROP TABLE fact_vec;
CREATE VIRTUAL TABLE fact_vec USING vec0 (
    fact_id INTEGER PRIMARY KEY,
    owner_id INTEGER PARTITION KEY,
    embedding FLOAT[$DIM] distance_metric = cosine,
    chunk_size = 8
);
INSERT INTO fact_vec (fact_id, owner_id, embedding)
    SELECT fact_id, owner_id, embedding FROM fact_vec_0009 ORDER BY owner_id, fact_id;
DROP TABLE fact_vec_0009;
