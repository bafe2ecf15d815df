-- External agents (`strata agents add NAME --user alice`): each is bound by the operator to one
-- person and reaches only that person's memory through `strata mcp`. Only a SHA-256 digest of
-- the agent's token is kept (the token is random, 256 bits: a slow hash adds nothing), so the
-- database never holds a usable credential. The binding goes with the person (`/wipe`).

CREATE TABLE agents (
    name TEXT PRIMARY KEY,
    person_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    last_used_at TEXT
);

CREATE INDEX agents_person ON agents (person_id);
