-- A queued turn counts the runs started on it (SQLite's 0024_turn_attempts.sql says why).
ALTER TABLE turn_queue ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
