-- A person's own switch for proactive research (SQLite's 0016_research_switch.sql says why).
ALTER TABLE persons ADD COLUMN research BIGINT NOT NULL DEFAULT 1;
