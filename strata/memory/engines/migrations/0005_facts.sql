-- The data graph: typed facts about an owner with validity, supersession and provenance,
-- keyword (FTS5) and vector (vec0, partitioned by owner) indexes, and the per-owner cursor of
-- fact extraction. The kind set is closed here AND in memory/facts.py (FACT_KINDS); a test
-- keeps the two equal.

CREATE TABLE facts (
    id INTEGER PRIMARY KEY,
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN (
        'user_specific', 'behavioral_pattern', 'place', 'document', 'discovery',
        'note', 'reflection'
    )),
    subject TEXT NOT NULL DEFAULT '',
    attribute TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL CHECK (length(trim(text)) > 0),
    confidence REAL NOT NULL DEFAULT 0.8 CHECK (confidence BETWEEN 0 AND 1),
    source TEXT NOT NULL,
    channel_id INTEGER REFERENCES channels (id) ON DELETE SET NULL,
    url TEXT,
    status TEXT NOT NULL DEFAULT 'live'
        CHECK (status IN ('live', 'superseded', 'retracted')),
    valid_from TEXT NOT NULL,
    invalid_at TEXT,
    superseded_by INTEGER REFERENCES facts (id) ON DELETE SET NULL,
    created_at TEXT NOT NULL,
    last_relevant_at TEXT NOT NULL,
    weight REAL NOT NULL DEFAULT 1.0,
    CHECK ((status = 'live') = (invalid_at IS NULL))
);

CREATE INDEX facts_owner_live ON facts (owner_id, status, kind);
CREATE INDEX facts_key ON facts (owner_id, subject, attribute) WHERE attribute != '';
CREATE INDEX facts_superseded_by ON facts (superseded_by);

-- Where a fact came from: the episode it was extracted from and/or the transcript rows that
-- said it. Plain ids (no foreign keys): provenance outlives a pruned row or a rolled-up episode.
CREATE TABLE fact_sources (
    fact_id INTEGER NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    episode_id INTEGER,
    row_id INTEGER,
    CHECK (episode_id IS NOT NULL OR row_id IS NOT NULL)
);

CREATE INDEX fact_sources_fact ON fact_sources (fact_id);
CREATE INDEX fact_sources_row ON fact_sources (row_id) WHERE row_id IS NOT NULL;
CREATE INDEX fact_sources_episode ON fact_sources (episode_id) WHERE episode_id IS NOT NULL;

-- Keyword index over text and attribute key ("home_city" finds a question about one's home
-- city; unicode61 splits it at the underscore), scoped by an indexed `owner_id` column like
-- the owner-scoped indexes of 0003, so a search intersects one owner's posting list.
CREATE VIRTUAL TABLE fact_fts USING fts5 (
    owner_id, text, attribute,
    content = 'facts', content_rowid = 'id', tokenize = 'porter unicode61'
);

CREATE TRIGGER fact_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO fact_fts (rowid, owner_id, text, attribute)
        VALUES (new.id, new.owner_id, new.text, new.attribute);
END;

CREATE TRIGGER fact_fts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO fact_fts (fact_fts, rowid, owner_id, text, attribute)
        VALUES ('delete', old.id, old.owner_id, old.text, old.attribute);
END;

CREATE TRIGGER fact_fts_update AFTER UPDATE OF owner_id, text, attribute ON facts BEGIN
    INSERT INTO fact_fts (fact_fts, rowid, owner_id, text, attribute)
        VALUES ('delete', old.id, old.owner_id, old.text, old.attribute);
    INSERT INTO fact_fts (rowid, owner_id, text, attribute)
        VALUES (new.id, new.owner_id, new.text, new.attribute);
END;

-- Only live facts have a vector: a fact that stops being live loses it, so a kNN over an
-- owner's partition never has to skip hidden facts.
CREATE VIRTUAL TABLE fact_vec USING vec0 (
    fact_id INTEGER PRIMARY KEY,
    owner_id INTEGER PARTITION KEY,
    embedding FLOAT[$DIM] distance_metric = cosine
);

CREATE TRIGGER fact_vec_follow_fact AFTER DELETE ON facts BEGIN
    DELETE FROM fact_vec WHERE fact_id = old.id;
END;

-- Fact extraction's cursor per owner: the newest leaf episode already read (id and creation
-- time, so an id SQLite reuses after a deletion is still seen as new).
CREATE TABLE fact_cursors (
    owner_id INTEGER PRIMARY KEY REFERENCES persons (id) ON DELETE CASCADE,
    last_episode_id INTEGER NOT NULL DEFAULT 0,
    last_created_at TEXT NOT NULL DEFAULT ''
);

-- While a person has memory paused (`persons.paused`), the conversation still flows; on
-- resume, every turn after `after_row_id` is forgotten, so nothing of the pause is remembered.
CREATE TABLE memory_pauses (
    person_id INTEGER PRIMARY KEY REFERENCES persons (id) ON DELETE CASCADE,
    after_row_id INTEGER NOT NULL,
    paused_at TEXT NOT NULL
);
