-- One fenced lease system (strata.memory.coordination.leases).
--
-- A lease carries a fence: a token kept while one holder holds it without a break and new
-- whenever it changes hands. A holder's writes check, in their own transaction, that the
-- lease still names it with its token, so a holder that stalled past its lease while
-- another process took it over writes nothing more. Leases taken before this migration get
-- the token 'legacy' (not empty: a token is never false); their holders' next take keeps it.
ALTER TABLE leases ADD COLUMN fence TEXT NOT NULL DEFAULT 'legacy';

-- The model calls each person made in the last window (`access.model_calls_per_minute`),
-- counted in the database so that every process on it holds a person to one cap
-- (strata.memory.coordination.model_calls). Rows older than the window are deleted as the
-- person's next call is counted.
CREATE TABLE model_calls (
    id INTEGER PRIMARY KEY,
    person_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    at TEXT NOT NULL
);
CREATE INDEX model_calls_person ON model_calls (person_id, at);

-- A memory owner's jobs are held through the same leases (`job:<owner id>`), running until
-- their runner's own lease and renewed with it (strata.memory.coordination.claims): the
-- claims of `job_leases` move there, fence and all, and that table goes.
INSERT INTO leases (name, holder, expires_at, fence)
SELECT 'job:' || CAST(j.owner_id AS TEXT), j.runner, r.lease_until, j.fence
FROM job_leases j JOIN runners r ON r.id = j.runner;
DROP TABLE job_leases;
CREATE INDEX leases_holder ON leases (holder);
