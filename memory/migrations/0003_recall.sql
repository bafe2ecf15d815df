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
