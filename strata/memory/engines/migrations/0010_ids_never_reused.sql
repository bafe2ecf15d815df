-- Ids are never reused (issue 12): SQLite gives a new row max(id) + 1, so deleting the newest
-- fact (or person, channel, message, episode) handed its id to the next one, and an old
-- "/forget #4" could hit a different fact. AUTOINCREMENT never hands out an id twice. Adding it
-- needs a rebuild of each table (SQLite's documented 12-step procedure): the new table is
-- created, the rows are copied with their ids, the old table dropped, the new one renamed, and
-- its indexes and triggers (FTS5 sync, vector clean-up) created again. Foreign keys are off
-- while migrations run (memory.db), so dropping a parent table cascades nothing; the ids stay
-- the same, so every reference, FTS index and vector stays valid. sqlite_sequence starts at
-- each table's current largest id.

-- persons
CREATE TABLE persons_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('person', 'room')),
    name TEXT NOT NULL,
    timezone TEXT NOT NULL DEFAULT 'UTC',
    paused INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    last_active_at TEXT
);

INSERT INTO persons_new (id, kind, name, timezone, paused, created_at, last_active_at)
    SELECT id, kind, name, timezone, paused, created_at, last_active_at FROM persons;

DROP TABLE persons;

ALTER TABLE persons_new RENAME TO persons;


-- channels
CREATE TABLE channels_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    platform TEXT NOT NULL,
    room_ref TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('private', 'shared', 'background')),
    source TEXT NOT NULL,
    memory_seed INTEGER NOT NULL DEFAULT 1,
    system_prompt TEXT,
    model TEXT,
    name TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    UNIQUE (platform, room_ref)
);

INSERT INTO channels_new (id, owner_id, platform, room_ref, kind, source, memory_seed, system_prompt, model, name, created_at)
    SELECT id, owner_id, platform, room_ref, kind, source, memory_seed, system_prompt, model, name, created_at FROM channels;

DROP TABLE channels;

ALTER TABLE channels_new RENAME TO channels;

CREATE INDEX channels_owner ON channels (owner_id);


-- transcript
CREATE TABLE transcript_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    channel_id INTEGER NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    person_id INTEGER REFERENCES persons (id) ON DELETE SET NULL,
    ts TEXT NOT NULL,
    source TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system')),
    kind TEXT NOT NULL DEFAULT 'message'
        CHECK (kind IN ('message', 'tool_call', 'tool_result', 'compaction')),
    content TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    lat REAL,
    lon REAL,
    platform_msg_id TEXT,
    covers_to INTEGER
);

INSERT INTO transcript_new (id, channel_id, owner_id, person_id, ts, source, role, kind, content, turn_id, lat, lon, platform_msg_id, covers_to)
    SELECT id, channel_id, owner_id, person_id, ts, source, role, kind, content, turn_id, lat, lon, platform_msg_id, covers_to FROM transcript;

DROP TABLE transcript;

ALTER TABLE transcript_new RENAME TO transcript;

CREATE INDEX transcript_channel ON transcript (channel_id, id);

CREATE INDEX transcript_compactions ON transcript (channel_id, id) WHERE kind = 'compaction';

CREATE INDEX transcript_owner ON transcript (owner_id, id);

CREATE INDEX transcript_turn ON transcript (turn_id);

CREATE TRIGGER transcript_fts_delete AFTER DELETE ON transcript BEGIN
    INSERT INTO transcript_fts (transcript_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
END;

CREATE TRIGGER transcript_fts_insert AFTER INSERT ON transcript BEGIN
    INSERT INTO transcript_fts (rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER transcript_fts_update AFTER UPDATE OF content ON transcript BEGIN
    INSERT INTO transcript_fts (transcript_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
    INSERT INTO transcript_fts (rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER transcript_owner_fts_delete AFTER DELETE ON transcript BEGIN
    INSERT INTO transcript_owner_fts (transcript_owner_fts, rowid, owner_id, content)
        VALUES ('delete', old.id, old.owner_id, old.content);
END;

CREATE TRIGGER transcript_owner_fts_insert AFTER INSERT ON transcript BEGIN
    INSERT INTO transcript_owner_fts (rowid, owner_id, content)
        VALUES (new.id, new.owner_id, new.content);
END;

CREATE TRIGGER transcript_owner_fts_update AFTER UPDATE OF owner_id, content ON transcript
BEGIN
    INSERT INTO transcript_owner_fts (transcript_owner_fts, rowid, owner_id, content)
        VALUES ('delete', old.id, old.owner_id, old.content);
    INSERT INTO transcript_owner_fts (rowid, owner_id, content)
        VALUES (new.id, new.owner_id, new.content);
END;

CREATE TRIGGER transcript_vec_follow_row AFTER DELETE ON transcript BEGIN
    DELETE FROM transcript_vec WHERE row_id = old.id;
END;


-- episodes
CREATE TABLE episodes_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
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
    tombstoned_at TEXT,
    child_count INTEGER NOT NULL DEFAULT 0
);

INSERT INTO episodes_new (id, owner_id, channel_id, level, parent_id, summary, key_terms, salience, emotion, emotion_intensity, source, method, started_at, ended_at, created_at, last_relevant_at, weight, tombstoned_at, child_count)
    SELECT id, owner_id, channel_id, level, parent_id, summary, key_terms, salience, emotion, emotion_intensity, source, method, started_at, ended_at, created_at, last_relevant_at, weight, tombstoned_at, child_count FROM episodes;

DROP TABLE episodes;

ALTER TABLE episodes_new RENAME TO episodes;

CREATE INDEX episodes_channel ON episodes (channel_id, level, tombstoned_at);

CREATE INDEX episodes_owner_live ON episodes (owner_id, tombstoned_at, level);

CREATE INDEX episodes_parent ON episodes (parent_id);

CREATE TRIGGER episode_fts_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO episode_fts (episode_fts, rowid, summary, key_terms)
        VALUES ('delete', old.id, old.summary, old.key_terms);
END;

CREATE TRIGGER episode_fts_insert AFTER INSERT ON episodes BEGIN
    INSERT INTO episode_fts (rowid, summary, key_terms)
        VALUES (new.id, new.summary, new.key_terms);
END;

CREATE TRIGGER episode_fts_update AFTER UPDATE OF summary, key_terms ON episodes BEGIN
    INSERT INTO episode_fts (episode_fts, rowid, summary, key_terms)
        VALUES ('delete', old.id, old.summary, old.key_terms);
    INSERT INTO episode_fts (rowid, summary, key_terms)
        VALUES (new.id, new.summary, new.key_terms);
END;

CREATE TRIGGER episode_owner_fts_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO episode_owner_fts (episode_owner_fts, rowid, owner_id, summary, key_terms)
        VALUES ('delete', old.id, old.owner_id, old.summary, old.key_terms);
END;

CREATE TRIGGER episode_owner_fts_insert AFTER INSERT ON episodes BEGIN
    INSERT INTO episode_owner_fts (rowid, owner_id, summary, key_terms)
        VALUES (new.id, new.owner_id, new.summary, new.key_terms);
END;

CREATE TRIGGER episode_owner_fts_update AFTER UPDATE OF owner_id, summary, key_terms
ON episodes BEGIN
    INSERT INTO episode_owner_fts (episode_owner_fts, rowid, owner_id, summary, key_terms)
        VALUES ('delete', old.id, old.owner_id, old.summary, old.key_terms);
    INSERT INTO episode_owner_fts (rowid, owner_id, summary, key_terms)
        VALUES (new.id, new.owner_id, new.summary, new.key_terms);
END;

CREATE TRIGGER episode_vec_follow_episode AFTER DELETE ON episodes BEGIN
    DELETE FROM episode_vec WHERE episode_id = old.id;
END;


-- facts
CREATE TABLE facts_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
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

INSERT INTO facts_new (id, owner_id, kind, subject, attribute, text, confidence, source, channel_id, url, status, valid_from, invalid_at, superseded_by, created_at, last_relevant_at, weight)
    SELECT id, owner_id, kind, subject, attribute, text, confidence, source, channel_id, url, status, valid_from, invalid_at, superseded_by, created_at, last_relevant_at, weight FROM facts;

DROP TABLE facts;

ALTER TABLE facts_new RENAME TO facts;

CREATE INDEX facts_key ON facts (owner_id, subject, attribute) WHERE attribute != '';

CREATE INDEX facts_owner_live ON facts (owner_id, status, kind);

CREATE INDEX facts_superseded_by ON facts (superseded_by);

CREATE TRIGGER fact_fts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO fact_fts (fact_fts, rowid, owner_id, text, attribute)
        VALUES ('delete', old.id, old.owner_id, old.text, old.attribute);
END;

CREATE TRIGGER fact_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO fact_fts (rowid, owner_id, text, attribute)
        VALUES (new.id, new.owner_id, new.text, new.attribute);
END;

CREATE TRIGGER fact_fts_update AFTER UPDATE OF owner_id, text, attribute ON facts BEGIN
    INSERT INTO fact_fts (fact_fts, rowid, owner_id, text, attribute)
        VALUES ('delete', old.id, old.owner_id, old.text, old.attribute);
    INSERT INTO fact_fts (rowid, owner_id, text, attribute)
        VALUES (new.id, new.owner_id, new.text, new.attribute);
END;

CREATE TRIGGER fact_vec_follow_fact AFTER DELETE ON facts BEGIN
    DELETE FROM fact_vec WHERE fact_id = old.id;
END;

