-- Services a person connects from a private chat, and the newest headers of a connected
-- mailbox (SQLite's 0018_connectors.sql says what each column holds and why).
CREATE TABLE connectors (
    owner_id BIGINT NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('calendar', 'contacts', 'mail')),
    label TEXT COLLATE "C" NOT NULL,
    secret TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    synced_at TEXT COLLATE "C",
    last_error TEXT COLLATE "C",
    PRIMARY KEY (owner_id, kind)
);

CREATE TABLE mail_headers (
    owner_id BIGINT NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    uid TEXT COLLATE "C" NOT NULL,
    sender TEXT COLLATE "C" NOT NULL,
    subject TEXT COLLATE "C" NOT NULL,
    sent_at TEXT COLLATE "C" NOT NULL,
    synced_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (owner_id, uid)
);

CREATE INDEX mail_headers_sent ON mail_headers (owner_id, sent_at);
