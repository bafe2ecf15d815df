-- One-time codes for `/link`: issued to a person in one chat, redeemed from another identity
-- (usually on another platform) to join both identities into one person.

CREATE TABLE link_codes (
    code TEXT PRIMARY KEY,
    person_id INTEGER NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
    identity TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);

CREATE INDEX link_codes_person ON link_codes (person_id);
