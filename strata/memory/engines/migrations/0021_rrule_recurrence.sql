-- Reminders' recurrence becomes RFC 5545 RRULE text, which dateutil.rrule computes
-- (cognition/recurrence.py): the home-made forms 'daily HH:MM', 'weekdays HH:MM' and
-- 'weekly:ddd HH:MM' are rewritten in place into exactly what `parse_recurrence` now stores,
-- e.g. 'weekly:mon 08:05' → 'FREQ=WEEKLY;BYDAY=MO;BYHOUR=8;BYMINUTE=5;BYSECOND=0' (the first
-- two letters of an English day name are its RFC 5545 code). Anything else is left as it is.
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
