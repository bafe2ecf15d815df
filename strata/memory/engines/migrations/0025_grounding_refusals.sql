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

-- What the jobs wrote before the grounding rule was never checked against what it rests on,
-- and small models wrote invented habits, places, reflections and portraits that then went
-- into every prompt. They are withdrawn here, and the jobs run again over what is stored:
-- the portrait is derived data (synthesis writes a checked one from the facts at its next
-- run); habits and places the jobs wrote (source 'user' with no channel: the pattern and geo
-- jobs) and the DMN's reflections are retracted (hidden from recall at once, deleted once
-- invalid long enough, as any retracted fact); the four jobs' cursors are reset so they read
-- the stored messages again. Facts from extraction, from a connector or from the person's
-- own /remember keep their place.
DELETE FROM portraits;

UPDATE facts SET status = 'retracted',
    invalid_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') || '.000000Z',
    last_relevant_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') || '.000000Z'
WHERE status = 'live' AND (
    (kind IN ('behavioral_pattern', 'place') AND source = 'user' AND channel_id IS NULL)
    OR (kind = 'reflection' AND source = 'dmn'));

DELETE FROM fact_vec WHERE fact_id IN (SELECT id FROM facts WHERE status = 'retracted');

-- The DMN's raw replies no longer become episodes (its profile feeds facts only); the
-- episodes made from them before are tombstoned (hidden from recall at once).
UPDATE episodes SET tombstoned_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') || '.000000Z'
WHERE source = 'dmn' AND tombstoned_at IS NULL;

DELETE FROM job_cursors WHERE job IN ('patterns', 'geo', 'synthesis', 'dmn');
