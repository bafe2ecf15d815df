-- The open job runs, indexed on their own (SQLite's 0015_open_job_runs.sql says why).
CREATE INDEX job_runs_open ON job_runs (runner) WHERE status = 'running';
