-- Background cognition: job runs and cursors, reminders and scheduled prompts, the portrait,
-- and calendar events from connected services.

-- One row per job run that did (or tried to do) work: what ran, for whom, how it ended.
CREATE TABLE job_runs (
    id INTEGER PRIMARY KEY,
    job TEXT NOT NULL,
    person_id INTEGER REFERENCES persons (id) ON DELETE CASCADE,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'ok', 'error', 'interrupted', 'cancelled')),
    result TEXT NOT NULL DEFAULT '',
    tokens INTEGER NOT NULL DEFAULT 0,
    error TEXT
);

CREATE INDEX job_runs_job_person ON job_runs (job, person_id, id);

-- Per job and person: the input watermark of the last successful run (a job whose inputs
-- still match it has nothing new to do), and when it was last checked.
CREATE TABLE job_cursors (
    job TEXT NOT NULL,
    person_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    cursor TEXT NOT NULL DEFAULT '',
    last_ok_at TEXT,
    last_checked_at TEXT,
    last_check TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (job, person_id)
);

-- Reminders (a text sent at a time) and scheduled prompts (a prompt run as a background turn,
-- its answer sent), one-off or recurring. Delivery is claim-then-deliver: pending → claimed →
-- delivered; `occurrence` is the due time being delivered, so a redelivery is recognisable.
CREATE TABLE reminders (
    id INTEGER PRIMARY KEY,
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    channel_id INTEGER NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('reminder', 'prompt')),
    text TEXT NOT NULL,
    due_at TEXT NOT NULL,
    timezone TEXT NOT NULL,
    recurrence TEXT,
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'claimed', 'delivered', 'cancelled')),
    claimed_at TEXT,
    delivered_at TEXT,
    deliveries INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    turn_id TEXT
);

CREATE INDEX reminders_due ON reminders (state, due_at);
CREATE INDEX reminders_owner ON reminders (owner_id, state, due_at);

-- The portrait ("who you are"), written by the synthesis job; the newest one is in every prompt.
CREATE TABLE portraits (
    id INTEGER PRIMARY KEY,
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    text TEXT NOT NULL,
    based_on TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);

CREATE INDEX portraits_owner ON portraits (owner_id, id);

-- Calendar events from connected services (capability sync), for the ambient snapshot.
CREATE TABLE calendar_events (
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    connector TEXT NOT NULL,
    uid TEXT NOT NULL,
    summary TEXT NOT NULL,
    location TEXT NOT NULL DEFAULT '',
    starts_at TEXT NOT NULL,
    ends_at TEXT,
    synced_at TEXT NOT NULL,
    PRIMARY KEY (owner_id, connector, uid, starts_at)
);

CREATE INDEX calendar_events_start ON calendar_events (owner_id, starts_at);
