-- The open job runs, indexed on their own. Every runner tick (once a minute) closes the runs
-- that stopped runners left open (`JobRunRepo.interrupt_stale`), inside the write lock, and a
-- retiring runner closes its own (`RunnerLeases.retire`): both look for `status = 'running'`,
-- a handful of rows in a table that gains one per model call and keeps 90 days of them.
-- Without this they scanned the whole table (about 30 ms per million rows, measured); the
-- partial index holds only the open runs, so finishing a run also takes it out.
CREATE INDEX job_runs_open ON job_runs (runner) WHERE status = 'running';
