-- A queued turn counts the runs started on it (strata.memory.coordination.turn_queue.start),
-- so a run after a crash knows it is a retry: the Matrix and Discord adapters then make sure
-- the message a deduplicated send resolves to shows this run's text.
ALTER TABLE turn_queue ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
