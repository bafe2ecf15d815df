-- The `capabilities` job is called `connector_sync`: it syncs connected services (calendars,
-- contacts, mail headers). Its run history and cursors follow the new name.
UPDATE job_runs SET job = 'connector_sync' WHERE job = 'capabilities';
UPDATE job_cursors SET job = 'connector_sync' WHERE job = 'capabilities';
