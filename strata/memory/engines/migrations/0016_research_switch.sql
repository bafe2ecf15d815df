-- A person's own switch for proactive research (`/research off`): research sends search
-- queries drawn from what the person said to an outside source (Wikipedia by default), so each
-- person may refuse it. On by default, as before; rooms never research.
ALTER TABLE persons ADD COLUMN research INTEGER NOT NULL DEFAULT 1;
