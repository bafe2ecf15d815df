-- The web view's one-time links and sessions, and what recall put before each reply, in the
-- database so that every process on it sees them: `/web` may be answered by one process (any
-- of them may claim a chat's turn) while another serves the pages. Only a token's sha256 is
-- stored, so a copy of the database opens no session. Both go with the person (`ON DELETE
-- CASCADE`); `/forget` and `/wipe` clear the person's recall log too (a block may quote what
-- was forgotten).
CREATE TABLE web_tokens (
    token_hash TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('link', 'session')),
    person_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    csrf TEXT,
    expires_at TEXT NOT NULL
);

CREATE INDEX web_tokens_expiry ON web_tokens (expires_at);

CREATE TABLE recall_log (
    id INTEGER PRIMARY KEY,
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    channel_id INTEGER NOT NULL,
    -- who asked: in a shared room not the owner, and their /wipe takes their queries along
    person_id INTEGER NOT NULL,
    at TEXT NOT NULL,
    query TEXT NOT NULL,
    block TEXT
);

CREATE INDEX recall_log_owner ON recall_log (owner_id, id);
CREATE INDEX recall_log_person ON recall_log (person_id);
