-- Persons (humans, and the memory scope of each shared room), their platform identities,
-- channels, and the append-only transcript with its FTS5 index.

CREATE TABLE persons (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('person', 'room')),
    name TEXT NOT NULL,
    timezone TEXT NOT NULL DEFAULT 'UTC',
    paused INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    last_active_at TEXT
);

CREATE TABLE identities (
    identity TEXT PRIMARY KEY,
    person_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    display_name TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);

CREATE INDEX identities_person ON identities (person_id);

CREATE TABLE channels (
    id INTEGER PRIMARY KEY,
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

CREATE INDEX channels_owner ON channels (owner_id);

CREATE TABLE transcript (
    id INTEGER PRIMARY KEY,
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
    platform_msg_id TEXT
);

CREATE INDEX transcript_channel ON transcript (channel_id, id);
CREATE INDEX transcript_owner ON transcript (owner_id, id);
CREATE INDEX transcript_turn ON transcript (turn_id);

CREATE VIRTUAL TABLE transcript_fts USING fts5 (
    content, content = 'transcript', content_rowid = 'id', tokenize = 'porter unicode61'
);

CREATE TRIGGER transcript_fts_insert AFTER INSERT ON transcript BEGIN
    INSERT INTO transcript_fts (rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER transcript_fts_delete AFTER DELETE ON transcript BEGIN
    INSERT INTO transcript_fts (transcript_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
END;

CREATE TRIGGER transcript_fts_update AFTER UPDATE OF content ON transcript BEGIN
    INSERT INTO transcript_fts (transcript_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
    INSERT INTO transcript_fts (rowid, content) VALUES (new.id, new.content);
END;
