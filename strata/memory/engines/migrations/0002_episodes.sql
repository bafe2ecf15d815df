-- Episodes (leaf 0, topic 1, era 2) with their citations of transcript rows, keyword and vector
-- indexes partitioned by owner, vectors for live transcript rows, and per-channel cursors.

CREATE TABLE episodes (
    id INTEGER PRIMARY KEY,
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    channel_id INTEGER NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    level INTEGER NOT NULL DEFAULT 0 CHECK (level IN (0, 1, 2)),
    parent_id INTEGER REFERENCES episodes (id) ON DELETE SET NULL,
    summary TEXT NOT NULL,
    key_terms TEXT NOT NULL DEFAULT '',
    salience REAL NOT NULL DEFAULT 0.5 CHECK (salience BETWEEN 0 AND 1),
    emotion TEXT NOT NULL DEFAULT 'neutral',
    emotion_intensity REAL NOT NULL DEFAULT 0 CHECK (emotion_intensity BETWEEN 0 AND 1),
    source TEXT NOT NULL,
    method TEXT NOT NULL DEFAULT 'llm' CHECK (method IN ('llm', 'extractive')),
    started_at TEXT NOT NULL,
    ended_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_relevant_at TEXT NOT NULL,
    weight REAL NOT NULL DEFAULT 1.0,
    tombstoned_at TEXT
);

CREATE INDEX episodes_owner_live ON episodes (owner_id, tombstoned_at, level);
CREATE INDEX episodes_channel ON episodes (channel_id, level, tombstoned_at);
CREATE INDEX episodes_parent ON episodes (parent_id);

CREATE TABLE episode_rows (
    episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    row_id INTEGER NOT NULL REFERENCES transcript (id) ON DELETE CASCADE,
    PRIMARY KEY (episode_id, row_id)
) WITHOUT ROWID;

CREATE INDEX episode_rows_row ON episode_rows (row_id);

CREATE VIRTUAL TABLE episode_fts USING fts5 (
    summary, key_terms, content = 'episodes', content_rowid = 'id', tokenize = 'porter unicode61'
);

CREATE TRIGGER episode_fts_insert AFTER INSERT ON episodes BEGIN
    INSERT INTO episode_fts (rowid, summary, key_terms)
        VALUES (new.id, new.summary, new.key_terms);
END;

CREATE TRIGGER episode_fts_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO episode_fts (episode_fts, rowid, summary, key_terms)
        VALUES ('delete', old.id, old.summary, old.key_terms);
END;

CREATE TRIGGER episode_fts_update AFTER UPDATE OF summary, key_terms ON episodes BEGIN
    INSERT INTO episode_fts (episode_fts, rowid, summary, key_terms)
        VALUES ('delete', old.id, old.summary, old.key_terms);
    INSERT INTO episode_fts (rowid, summary, key_terms)
        VALUES (new.id, new.summary, new.key_terms);
END;

CREATE VIRTUAL TABLE episode_vec USING vec0 (
    episode_id INTEGER PRIMARY KEY,
    owner_id INTEGER PARTITION KEY,
    embedding FLOAT[$DIM] distance_metric = cosine
);

CREATE VIRTUAL TABLE transcript_vec USING vec0 (
    row_id INTEGER PRIMARY KEY,
    owner_id INTEGER PARTITION KEY,
    embedding FLOAT[$DIM] distance_metric = cosine
);

-- The last transcript row of each channel already covered by an episode (or judged muted).
CREATE TABLE episode_cursors (
    channel_id INTEGER PRIMARY KEY REFERENCES channels (id) ON DELETE CASCADE,
    last_row_id INTEGER NOT NULL DEFAULT 0
);
