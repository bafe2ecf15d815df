-- Job runs indexed person first. The decay job deletes a person's old run records every hour
-- (`JobRunRepo.prune`), and `strata jobs status` sums a person's runs per job: both ask for
-- one person's rows of every job, which the index led by `job` could only find by scanning
-- the whole table, once per person per hour. Led by the person, the same index still serves
-- every lookup of one job for one person (`last`, `last_ok_started`).
DROP INDEX job_runs_job_person;
CREATE INDEX job_runs_person_job ON job_runs (person_id, job, id);
