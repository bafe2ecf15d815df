-- SQLite migration 0012 for PostgreSQL: runners with leases, per-owner job leases, and the
-- runner named on job runs and reminder claims (see memory/migrations/0012_runner_claims.sql).
CREATE TABLE runners (
    id TEXT COLLATE "C" PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL,
    started_at TEXT COLLATE "C" NOT NULL,
    lease_until TEXT COLLATE "C" NOT NULL
);

CREATE INDEX runners_name ON runners (name);

CREATE TABLE job_leases (
    owner_id BIGINT PRIMARY KEY REFERENCES persons (id) ON DELETE CASCADE,
    runner TEXT COLLATE "C" NOT NULL,
    claimed_at TEXT COLLATE "C" NOT NULL
);

CREATE INDEX job_leases_runner ON job_leases (runner);

ALTER TABLE job_runs ADD COLUMN runner TEXT COLLATE "C";

ALTER TABLE reminders ADD COLUMN claimed_by TEXT COLLATE "C";
