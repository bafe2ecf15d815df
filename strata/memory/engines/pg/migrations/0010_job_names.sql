-- The `capabilities` job is called `connector_sync` (SQLite's 0019_job_names.sql says why).
UPDATE job_runs SET job = 'connector_sync' WHERE job = 'capabilities';
UPDATE job_cursors SET job = 'connector_sync' WHERE job = 'capabilities';
