-- SQLite migration 0027 for PostgreSQL: an owner's prepared recall table and the counter of
-- changes to their rows (see memory/engines/migrations/0027_recall_tables.sql), kept by
-- row triggers as SQLite's are.
CREATE TABLE recall_epochs (
    owner BIGINT PRIMARY KEY,
    epoch BIGINT NOT NULL
);

CREATE TABLE recall_tables (
    owner BIGINT PRIMARY KEY,
    epoch BIGINT NOT NULL,
    row_count BIGINT NOT NULL,
    newest_id BIGINT NOT NULL,
    cursor_sum BIGINT NOT NULL,
    format TEXT COLLATE "C" NOT NULL,
    body BYTEA NOT NULL
);
-- Stored out of line, uncompressed: a table is mostly float32 vectors, which do not compress,
-- and decompressing one on every first search cost more than reading it.
ALTER TABLE recall_tables ALTER COLUMN body SET STORAGE EXTERNAL;

CREATE FUNCTION recall_owner_changed(who BIGINT) RETURNS void LANGUAGE plpgsql AS $body$
BEGIN
    INSERT INTO recall_epochs (owner, epoch) VALUES (who, 1)
        ON CONFLICT (owner) DO UPDATE SET epoch = recall_epochs.epoch + 1;
    DELETE FROM recall_tables WHERE owner = who;
END
$body$;

CREATE FUNCTION recall_row_changed() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    PERFORM recall_owner_changed(OLD.owner_id);
    IF TG_OP = 'UPDATE' AND NEW.owner_id <> OLD.owner_id THEN
        PERFORM recall_owner_changed(NEW.owner_id);
    END IF;
    RETURN NULL;
END
$body$;

CREATE TRIGGER recall_row_changed AFTER DELETE OR UPDATE ON transcript
    FOR EACH ROW EXECUTE FUNCTION recall_row_changed();

-- A row's searchable text carries its speaker's name.
CREATE FUNCTION recall_speaker_renamed() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    PERFORM recall_owner_changed(o.owner_id)
        FROM (SELECT DISTINCT owner_id FROM transcript WHERE person_id = NEW.id) AS o;
    RETURN NULL;
END
$body$;

CREATE TRIGGER recall_speaker_renamed AFTER UPDATE OF name ON persons
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)
    EXECUTE FUNCTION recall_speaker_renamed();
