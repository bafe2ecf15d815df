-- What the grounding rule (strata.memory.domain.grounding) refused to store, counted per
-- person, layer (facts, patterns, portrait, episodes, ...) and reason, for `strata jobs
-- status`. The refused text itself is only logged (at DEBUG), never kept.
CREATE TABLE grounding_refusals (
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    layer TEXT NOT NULL,
    reason TEXT NOT NULL,
    count INTEGER NOT NULL DEFAULT 0,
    last_at TEXT NOT NULL,
    PRIMARY KEY (owner_id, layer, reason)
);
