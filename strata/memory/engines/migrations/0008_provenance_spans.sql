-- Roll-up parents keep provenance as links and a span, not as row citations
-- (docs/lifecycle.md §2):
-- a topic or era episode records how many child episodes it gathered (`child_count`; the
-- children point at it through `parent_id` until the janitor deletes them), and its
-- `started_at` / `ended_at` / `channel_id` already say which time span and channel it covers,
-- which outlives the children. Only live leaves cite transcript rows, so a rolled-up leaf's
-- rows below the watermark can be pruned.

ALTER TABLE episodes ADD COLUMN child_count INTEGER NOT NULL DEFAULT 0;

-- Parents written before this migration: count the children still kept (a parent whose
-- children were already deleted keeps 0, "unknown"; its span is still recorded).
UPDATE episodes SET child_count = (SELECT count(*) FROM episodes c WHERE c.parent_id = episodes.id)
    WHERE level > 0;

-- Their inherited row citations go. The rows are then cited by tombstoned leaves only, so the
-- next decay pass prunes those below the watermark, like any other rolled-up leaf's rows.
DELETE FROM episode_rows WHERE episode_id IN (SELECT id FROM episodes WHERE level > 0);

-- Background channels (DMN, research, scheduled, delegates, external agents, jobs) never run
-- turn-zero recall; channels created before this migration were stored with it on.
UPDATE channels SET memory_seed = 0 WHERE kind = 'background';
