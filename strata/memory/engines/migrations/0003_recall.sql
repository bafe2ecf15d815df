-- Recall support: a per-channel cursor for transcript row vectors, and vectors that leave
-- with their transcript row or episode (vec0 tables cannot have foreign keys).

CREATE TABLE transcript_vec_cursors (
    channel_id INTEGER PRIMARY KEY REFERENCES channels (id) ON DELETE CASCADE,
    last_row_id INTEGER NOT NULL DEFAULT 0
);

CREATE TRIGGER transcript_vec_follow_row AFTER DELETE ON transcript BEGIN
    DELETE FROM transcript_vec WHERE row_id = old.id;
END;

CREATE TRIGGER episode_vec_follow_episode AFTER DELETE ON episodes BEGIN
    DELETE FROM episode_vec WHERE episode_id = old.id;
END;

-- Owner-scoped keyword indexes for recall. The FTS tables of 0001/0002 index all owners
-- together, so a query for one person first ranks every owner's matches (seconds for common
-- words in a large store); with `owner_id` as an indexed column, `owner_id : "42" AND (...)`
-- intersects posting lists inside FTS5. Queries always column-qualify their terms.
CREATE VIRTUAL TABLE episode_owner_fts USING fts5 (
    owner_id, summary, key_terms,
    content = 'episodes', content_rowid = 'id', tokenize = 'porter unicode61'
);

CREATE TRIGGER episode_owner_fts_insert AFTER INSERT ON episodes BEGIN
    INSERT INTO episode_owner_fts (rowid, owner_id, summary, key_terms)
        VALUES (new.id, new.owner_id, new.summary, new.key_terms);
END;

CREATE TRIGGER episode_owner_fts_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO episode_owner_fts (episode_owner_fts, rowid, owner_id, summary, key_terms)
        VALUES ('delete', old.id, old.owner_id, old.summary, old.key_terms);
END;

CREATE TRIGGER episode_owner_fts_update AFTER UPDATE OF owner_id, summary, key_terms
ON episodes BEGIN
    INSERT INTO episode_owner_fts (episode_owner_fts, rowid, owner_id, summary, key_terms)
        VALUES ('delete', old.id, old.owner_id, old.summary, old.key_terms);
    INSERT INTO episode_owner_fts (rowid, owner_id, summary, key_terms)
        VALUES (new.id, new.owner_id, new.summary, new.key_terms);
END;

INSERT INTO episode_owner_fts (episode_owner_fts) VALUES ('rebuild');

CREATE VIRTUAL TABLE transcript_owner_fts USING fts5 (
    owner_id, content,
    content = 'transcript', content_rowid = 'id', tokenize = 'porter unicode61'
);

CREATE TRIGGER transcript_owner_fts_insert AFTER INSERT ON transcript BEGIN
    INSERT INTO transcript_owner_fts (rowid, owner_id, content)
        VALUES (new.id, new.owner_id, new.content);
END;

CREATE TRIGGER transcript_owner_fts_delete AFTER DELETE ON transcript BEGIN
    INSERT INTO transcript_owner_fts (transcript_owner_fts, rowid, owner_id, content)
        VALUES ('delete', old.id, old.owner_id, old.content);
END;

CREATE TRIGGER transcript_owner_fts_update AFTER UPDATE OF owner_id, content ON transcript
BEGIN
    INSERT INTO transcript_owner_fts (transcript_owner_fts, rowid, owner_id, content)
        VALUES ('delete', old.id, old.owner_id, old.content);
    INSERT INTO transcript_owner_fts (rowid, owner_id, content)
        VALUES (new.id, new.owner_id, new.content);
END;

INSERT INTO transcript_owner_fts (transcript_owner_fts) VALUES ('rebuild');
