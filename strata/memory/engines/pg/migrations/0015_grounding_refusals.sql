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

-- What the jobs wrote before the grounding rule is withdrawn and written again (SQLite's
-- 0025_grounding_refusals.sql says what and why).
DELETE FROM portraits;

UPDATE facts SET status = 'retracted',
    invalid_at = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    last_relevant_at = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
WHERE status = 'live' AND (
    (kind IN ('behavioral_pattern', 'place') AND source = 'user' AND channel_id IS NULL)
    OR (kind = 'reflection' AND source = 'dmn'));

DELETE FROM fact_vec WHERE fact_id IN (SELECT id FROM facts WHERE status = 'retracted');

-- The DMN's raw replies no longer become episodes (its profile feeds facts only); the
-- episodes made from them before are tombstoned (hidden from recall at once).
UPDATE episodes SET tombstoned_at = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
WHERE source = 'dmn' AND tombstoned_at IS NULL;

DELETE FROM job_cursors WHERE job IN ('patterns', 'geo', 'synthesis', 'dmn');
