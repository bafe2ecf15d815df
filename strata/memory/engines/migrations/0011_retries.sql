-- Faults and retries (issue 12).
--
-- A failed job run backs off: `failures` counts the job's failed runs since its last success
-- for this person, `retry_at` is when the next attempt may start (NULL: no wait).
ALTER TABLE job_cursors ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_cursors ADD COLUMN retry_at TEXT;

-- Reminders count failed delivery attempts, back off between them (`retry_at`) and end
-- `dead` after too many, which the person is told about once (`dead_told_at`). `unconfirmed`
-- counts sends started by a process that stopped before marking them delivered: at most one
-- such send is repeated, so a crash costs at most one duplicate. SQLite cannot change a CHECK
-- constraint in place, so the table is rebuilt with the new state; nothing references it.
CREATE TABLE reminders_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused (see 0010)
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    channel_id INTEGER NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('reminder', 'prompt')),
    text TEXT NOT NULL,
    due_at TEXT NOT NULL,
    timezone TEXT NOT NULL,
    recurrence TEXT,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'claimed', 'delivered', 'cancelled', 'dead')),
    claimed_at TEXT,
    delivered_at TEXT,
    deliveries INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    turn_id TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    retry_at TEXT,
    last_error TEXT,
    sending_at TEXT,
    unconfirmed INTEGER NOT NULL DEFAULT 0,
    dead_told_at TEXT
);

INSERT INTO reminders_new (id, owner_id, channel_id, kind, text, due_at, timezone, recurrence,
                           state, claimed_at, delivered_at, deliveries, created_at, turn_id)
SELECT id, owner_id, channel_id, kind, text, due_at, timezone, recurrence, state, claimed_at,
       delivered_at, deliveries, created_at, turn_id FROM reminders;

DROP TABLE reminders;

ALTER TABLE reminders_new RENAME TO reminders;

CREATE INDEX reminders_due ON reminders (state, due_at);

CREATE INDEX reminders_owner ON reminders (owner_id, state, due_at);
