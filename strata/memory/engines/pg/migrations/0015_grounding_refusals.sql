-- Refusals of the grounding rule per person, layer and reason (SQLite's
-- 0025_grounding_refusals.sql says what each column holds and why).
CREATE TABLE grounding_refusals (
    owner_id BIGINT NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    layer TEXT COLLATE "C" NOT NULL,
    reason TEXT COLLATE "C" NOT NULL,
    count BIGINT NOT NULL DEFAULT 0,
    last_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (owner_id, layer, reason)
);
