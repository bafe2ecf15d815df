-- Services a person connects from a private chat (`/connect calendar|contacts|mail`).
-- `secret` is the only place the service's address and login live: a Fernet token (see
-- cognition/connector_secrets.py) that needs the key file beside the database to read, so a
-- copy of the database alone carries no usable password. `label` is what `/memory` shows: the
-- service's host name, never a path (a calendar's private URL is itself a secret) nor a login.
-- Not in the export (memory/export.py): a person's export is a file they pass around.
CREATE TABLE connectors (
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('calendar', 'contacts', 'mail')),
    label TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at TEXT NOT NULL,
    synced_at TEXT,
    last_error TEXT,
    PRIMARY KEY (owner_id, kind)
);

-- The newest mail headers of a connected mailbox (sender, subject, date; never a body), for
-- the ambient snapshot's "recent mail" line. Replaced by each sync.
CREATE TABLE mail_headers (
    owner_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    uid TEXT NOT NULL,
    sender TEXT NOT NULL,
    subject TEXT NOT NULL,
    sent_at TEXT NOT NULL,
    synced_at TEXT NOT NULL,
    PRIMARY KEY (owner_id, uid)
);

CREATE INDEX mail_headers_sent ON mail_headers (owner_id, sent_at);
