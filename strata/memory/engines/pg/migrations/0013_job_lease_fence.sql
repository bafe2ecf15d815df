-- SQLite migration 0023 for PostgreSQL: the fence of a claim on an owner's jobs (see
-- memory/engines/migrations/0023_job_lease_fence.sql).
ALTER TABLE job_leases ADD COLUMN fence TEXT COLLATE "C" NOT NULL DEFAULT 'legacy';
