-- Several processes on one database, the turns part (issue 14).
--
-- `leases`: named, expiring claims held by one process at a time: `turn:<channel id>` while a
-- process answers a turn of that channel, `poll:telegram:<bot id>` while a process polls a
-- Telegram bot's getUpdates. `expires_at` is on the holder's wall clock (never the simulated
-- one); a holder renews its lease while it works, so a lease outlives its holder by at most
-- one lease time.
CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at TEXT NOT NULL
);

-- `turn_queue`: turns taken in (the message stored, or a command) and not yet answered and
-- shown. The process that polls a platform stores each message and queues its turn here
-- before it confirms the message to the platform; any process then claims the channel's lease
-- and answers the channel's queued turns in order, deleting each once its reply is shown.
-- `message` is the inbound message as JSON (a command is not in the transcript, so its text
-- is only here, until its turn is done).
CREATE TABLE turn_queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    platform TEXT NOT NULL,
    channel_id INTEGER NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    person_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    turn_id TEXT NOT NULL UNIQUE,
    stored INTEGER NOT NULL,
    reply_to TEXT,
    message TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE INDEX turn_queue_channel ON turn_queue (platform, channel_id, id);
