-- Reminders' recurrence becomes RFC 5545 RRULE text (SQLite's 0021_rrule_recurrence.sql says
-- why and how): the same statement, rewriting the home-made forms in place.
UPDATE reminders SET recurrence =
    CASE
        WHEN recurrence LIKE 'daily %' THEN 'FREQ=DAILY'
        WHEN recurrence LIKE 'weekdays %' THEN 'FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR'
        ELSE 'FREQ=WEEKLY;BYDAY=' || upper(substr(recurrence, 8, 2))
    END
    || ';BYHOUR=' || CAST(CAST(substr(recurrence, length(recurrence) - 4, 2) AS INTEGER) AS TEXT)
    || ';BYMINUTE=' || CAST(CAST(substr(recurrence, length(recurrence) - 1, 2) AS INTEGER) AS TEXT)
    || ';BYSECOND=0'
WHERE recurrence LIKE 'daily __:__' OR recurrence LIKE 'weekdays __:__'
    OR recurrence LIKE 'weekly:mon __:__' OR recurrence LIKE 'weekly:tue __:__'
    OR recurrence LIKE 'weekly:wed __:__' OR recurrence LIKE 'weekly:thu __:__'
    OR recurrence LIKE 'weekly:fri __:__' OR recurrence LIKE 'weekly:sat __:__'
    OR recurrence LIKE 'weekly:sun __:__';
