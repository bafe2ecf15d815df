-- A person's search as a prepared table (issue 37): recall keeps each owner's rows ranked from
-- an in-memory table (`strata.memory.recall.index`); building it reads and splits every row,
-- most of a person's first search. `recall_tables` keeps the built table per owner, so a first
-- search reads one row; `recall_epochs` is a per-owner counter that every change to an owner's
-- rows other than a new row moves (a row deleted or edited, a speaker renamed or merged away).
-- A table is used only while the counter, the owner's row count and newest id and the vector
-- cursors tell that nothing but new rows came since it was built; a change deletes the
-- owner's table in the same transaction, so what was forgotten is never kept in one.
-- No foreign keys: the triggers also run while a person is deleted (their rows cascade), and a
-- person merge (`merge_persons`) must not move one person's table or counter to another.
CREATE TABLE recall_epochs (
    owner INTEGER PRIMARY KEY,
    epoch INTEGER NOT NULL
);

CREATE TABLE recall_tables (
    owner INTEGER PRIMARY KEY,
    epoch INTEGER NOT NULL,
    row_count INTEGER NOT NULL,
    newest_id INTEGER NOT NULL,
    cursor_sum INTEGER NOT NULL,
    format TEXT NOT NULL,
    body BLOB NOT NULL
);

CREATE TRIGGER recall_row_deleted AFTER DELETE ON transcript BEGIN
    INSERT INTO recall_epochs (owner, epoch) VALUES (old.owner_id, 1)
        ON CONFLICT (owner) DO UPDATE SET epoch = recall_epochs.epoch + 1;
    DELETE FROM recall_tables WHERE owner = old.owner_id;
END;

CREATE TRIGGER recall_row_updated AFTER UPDATE ON transcript BEGIN
    INSERT INTO recall_epochs (owner, epoch) VALUES (old.owner_id, 1)
        ON CONFLICT (owner) DO UPDATE SET epoch = recall_epochs.epoch + 1;
    INSERT INTO recall_epochs (owner, epoch) VALUES (new.owner_id, 1)
        ON CONFLICT (owner) DO UPDATE SET epoch = recall_epochs.epoch + 1;
    DELETE FROM recall_tables WHERE owner IN (old.owner_id, new.owner_id);
END;

-- A row's searchable text carries its speaker's name.
CREATE TRIGGER recall_speaker_renamed AFTER UPDATE OF name ON persons BEGIN
    INSERT INTO recall_epochs (owner, epoch)
        SELECT DISTINCT owner_id, 1 FROM transcript WHERE person_id = new.id
        ON CONFLICT (owner) DO UPDATE SET epoch = recall_epochs.epoch + 1;
    DELETE FROM recall_tables
        WHERE owner IN (SELECT owner_id FROM transcript WHERE person_id = new.id);
END;
