-- Job runs indexed person first (SQLite's 0014_job_runs_by_person.sql says why).
DROP INDEX job_runs_job_person;
CREATE INDEX job_runs_person_job ON job_runs (person_id, job, id);
