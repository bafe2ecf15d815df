-- The fence of a claim on a memory owner's jobs: a token the claiming runner gets, kept while
-- the same runner holds the owner without a break and new whenever the claim changes hands
-- (or is taken again after a release). Every write of a job run checks, in its own
-- transaction, that the owner's row still names this runner and this token
-- (`strata.memory.coordination.claims.RunnerLeases.fenced`), so a runner that stalled past
-- its lease while another took the owner over writes nothing more. Rows claimed before this
-- migration get the token 'legacy' (not empty: a token is never false); their runners' next
-- claim keeps it, as the same hold.
ALTER TABLE job_leases ADD COLUMN fence TEXT NOT NULL DEFAULT 'legacy';
