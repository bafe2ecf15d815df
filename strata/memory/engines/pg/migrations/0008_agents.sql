-- External agents and the digest of their tokens (SQLite's 0017_agents.sql says why).
CREATE TABLE agents (
    name TEXT COLLATE "C" PRIMARY KEY,
    person_id BIGINT NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    token_hash TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at TEXT COLLATE "C" NOT NULL,
    last_used_at TEXT COLLATE "C"
);

CREATE INDEX agents_person ON agents (person_id);
