-- Several processes on one database (issue 14): who holds which background work.
--
-- Every cognition runner (a `strata run` or `strata worker` process) has a row in `runners`
-- that it renews while it lives (`lease_until`). A claim names its runner and is live exactly
-- as long as that runner's lease is, so a process that dies leaves claims that expire on their
-- own and a live process never loses one: there is nothing per claim to renew.
-- `name` is the process's stable name (host:pid, or `cognition.runner_name`): a process that
-- starts under the name of one that stopped knows that one is gone and frees its claims at
-- once.
CREATE TABLE runners (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    started_at TEXT NOT NULL,
    lease_until TEXT NOT NULL
);

CREATE INDEX runners_name ON runners (name);

-- One row per memory owner whose jobs a runner is working through now: all of one person's
-- jobs run in one process, one after another, as they do in a single process.
CREATE TABLE job_leases (
    owner_id INTEGER PRIMARY KEY REFERENCES persons (id) ON DELETE CASCADE,
    runner TEXT NOT NULL,
    claimed_at TEXT NOT NULL
);

CREATE INDEX job_leases_runner ON job_leases (runner);

-- The runner that opened a run, and the runner that claimed a reminder: start-up recovery
-- only touches those whose runner is gone.
ALTER TABLE job_runs ADD COLUMN runner TEXT;

ALTER TABLE reminders ADD COLUMN claimed_by TEXT;
