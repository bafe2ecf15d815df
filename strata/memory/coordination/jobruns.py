"""Job runs and job cursors: the record of the background runner's work.

A run row is opened (`running`) before a job does anything and closed with its outcome; the
cursor (the job's input watermark) moves only in the same transaction that closes a successful
run, so a crash mid-job leaves the cursor where it was and the work is redone, never lost. A
failed run counts a failure on the cursor and sets when the next attempt may start (the runner
picks the backoff); a successful one clears both.
Imports `bot` leaf modules, `strata.memory.engines.db` and `strata.memory.coordination.claims`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from strata.core.clock import from_iso, to_iso
from strata.memory.coordination.claims import INTERRUPT_RUNS, held_by_a_live_runner
from strata.memory.engines.db import Database, Row


@dataclass(frozen=True, slots=True)
class JobRun:
    id: int
    job: str
    person_id: int | None
    started_at: datetime
    finished_at: datetime | None
    status: str
    result: str
    tokens: int
    error: str | None


@dataclass(frozen=True, slots=True)
class JobSummary:
    job: str
    person_id: int | None
    runs: int
    errors: int
    tokens: int
    last: JobRun


@dataclass(frozen=True, slots=True)
class JobCursor:
    job: str
    person_id: int
    cursor: str
    last_ok_at: datetime | None
    last_checked_at: datetime | None
    last_check: str
    failures: int = 0  # failed runs since the last successful one
    retry_at: datetime | None = None  # no new attempt before this (after a failure)


@dataclass(frozen=True, slots=True)
class JobFailure:
    """A job failing for someone now: its failures in a row, the next try, the last error."""

    job: str
    person: str
    failures: int
    retry_at: datetime | None
    error: str


def _run(row: Row) -> JobRun:
    return JobRun(
        id=row["id"],
        job=row["job"],
        person_id=row["person_id"],
        started_at=from_iso(row["started_at"]),
        finished_at=from_iso(row["finished_at"]) if row["finished_at"] else None,
        status=row["status"],
        result=row["result"],
        tokens=row["tokens"],
        error=row["error"],
    )


def _cursor(row: Row) -> JobCursor:
    return JobCursor(
        job=row["job"],
        person_id=row["person_id"],
        cursor=row["cursor"],
        last_ok_at=from_iso(row["last_ok_at"]) if row["last_ok_at"] else None,
        last_checked_at=from_iso(row["last_checked_at"]) if row["last_checked_at"] else None,
        last_check=row["last_check"],
        failures=row["failures"],
        retry_at=from_iso(row["retry_at"]) if row["retry_at"] else None,
    )


class JobRunRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def start(self, job: str, person_id: int | None, now: datetime,
                    runner: str | None = None) -> int:
        """Open a `running` row, naming the runner (`strata.memory.coordination.claims`) that
        works on it."""
        run_id = await self.db.execute_write(
            "INSERT INTO job_runs (job, person_id, started_at, runner) VALUES (?, ?, ?, ?)",
            (job, person_id, to_iso(now), runner),
        )
        assert run_id is not None
        return run_id

    async def finish(
        self,
        run_id: int,
        *,
        now: datetime,
        status: str,
        result: str = "",
        tokens: int = 0,
        error: str | None = None,
        cursor: str | None = None,
        retry_at: datetime | None = None,
    ) -> None:
        """Close a run; with `cursor`, move the job's watermark in the same transaction (and
        clear its failures). A failed run (`status` error) with `retry_at` counts a failure
        and puts off the next attempt until then."""
        async with self.db.write() as conn:
            cur = await conn.execute(
                "UPDATE job_runs SET finished_at = ?, status = ?, result = ?, tokens = ?,"
                " error = ? WHERE id = ? RETURNING job, person_id",
                (to_iso(now), status, result, tokens, error, run_id),
            )
            row = await cur.fetchone()
            await cur.close()
            if cursor is not None and row is not None and row[1] is not None:
                await conn.execute(
                    "INSERT INTO job_cursors (job, person_id, cursor, last_ok_at, last_checked_at,"
                    " last_check) VALUES (?, ?, ?, ?, ?, 'ran')"
                    " ON CONFLICT (job, person_id) DO UPDATE SET cursor = excluded.cursor,"
                    " last_ok_at = excluded.last_ok_at, last_checked_at = excluded.last_checked_at,"
                    " last_check = 'ran', failures = 0, retry_at = NULL",
                    (row[0], row[1], cursor, to_iso(now), to_iso(now)),
                )
            if retry_at is not None and row is not None and row[1] is not None:
                await conn.execute(
                    "INSERT INTO job_cursors (job, person_id, failures, retry_at)"
                    " VALUES (?, ?, 1, ?) ON CONFLICT (job, person_id) DO UPDATE SET"
                    " failures = job_cursors.failures + 1, retry_at = excluded.retry_at",
                    (row[0], row[1], to_iso(retry_at) if retry_at else None),
                )

    async def record_usage(self, purpose: str, person_id: int, now: datetime,
                           tokens: int) -> None:
        """Count a model call made outside a job run (after a turn: fact extraction,
        compaction) as a finished `ok` row of job `purpose` (a name no background job has,
        such as `extract:turn`), so `summary` shows its tokens per person while no job's
        interval, cursor or retry bookkeeping sees it."""
        await self.db.execute_write(
            "INSERT INTO job_runs (job, person_id, started_at, finished_at, status, result,"
            " tokens) VALUES (?, ?, ?, ?, 'ok', 'model call after a turn', ?)",
            (purpose, person_id, to_iso(now), to_iso(now), tokens),
        )

    async def prune(self, person_id: int, before: datetime) -> int:
        """Delete the person's finished runs that started before `before`, except each job's
        newest run and newest successful one (what `last`, `last_ok_started` and `strata jobs
        status` read); return how many. Without this the table grows by a row per model call
        after every turn (`record_usage`), forever."""
        return await self.db.execute_atomic(
            "DELETE FROM job_runs WHERE person_id = ? AND started_at < ?"
            " AND finished_at IS NOT NULL"
            " AND id NOT IN (SELECT max(id) FROM job_runs WHERE person_id = ? GROUP BY job)"
            " AND id NOT IN (SELECT max(id) FROM job_runs WHERE person_id = ? AND status = 'ok'"
            " GROUP BY job)",
            (person_id, to_iso(before), person_id, person_id))

    async def interrupt_stale(self, now: datetime, runner: str | None = None) -> int:
        """Mark runs left `running` by a process that stopped as interrupted; return how many.

        Only runs whose runner is gone (its lease ran out, or no runner was recorded): a run
        of `runner` (the caller) or of another live process is left alone."""
        async with self.db.write() as conn:
            cur = await conn.execute(
                INTERRUPT_RUNS + "(runner IS NULL OR (runner <> ? AND NOT"
                f" {held_by_a_live_runner('job_runs.runner')}))",
                (to_iso(now), runner or "", to_iso(now)),
            )
            return int(cur.rowcount or 0)

    async def abandon(self, job: str, person_id: int, runner: str, now: datetime) -> int:
        """Close `runner`'s open run of `job` for the person as interrupted, when the runner
        lost the person to another mid-run (its fenced writes were refused): the run moves
        no cursor and counts no failure; the new holder's run is the one recorded."""
        return await self.db.execute_atomic(
            "UPDATE job_runs SET status = 'interrupted', finished_at = ?, error = 'another"
            " process took this person over during this run; its run is the one kept'"
            " WHERE job = ? AND person_id = ? AND runner = ? AND status = 'running'",
            (to_iso(now), job, person_id, runner))

    async def cursor(self, job: str, person_id: int) -> JobCursor | None:
        row = await self.db.fetchone(
            "SELECT * FROM job_cursors WHERE job = ? AND person_id = ?", (job, person_id)
        )
        return _cursor(row) if row else None

    async def checked(self, job: str, person_id: int, now: datetime, what: str) -> None:
        """Note that a job was looked at and had nothing to do (no run row for that)."""
        await self.db.execute_write(
            "INSERT INTO job_cursors (job, person_id, last_checked_at, last_check)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (job, person_id) DO UPDATE SET"
            " last_checked_at = excluded.last_checked_at, last_check = excluded.last_check",
            (job, person_id, to_iso(now), what),
        )

    async def last(self, job: str, person_id: int | None) -> JobRun | None:
        row = await self.db.fetchone(
            "SELECT * FROM job_runs WHERE job = ? AND person_id IS NOT DISTINCT FROM ?"
            " ORDER BY id DESC LIMIT 1",
            (job, person_id),
        )
        return _run(row) if row else None

    async def last_ok_started(self, job: str, person_id: int) -> datetime | None:
        """When the newest successful run of `job` for the person started."""
        value = await self.db.fetchval(
            "SELECT started_at FROM job_runs WHERE job = ? AND person_id = ? AND status = 'ok'"
            " ORDER BY id DESC LIMIT 1",
            (job, person_id),
        )
        return from_iso(value) if value else None

    async def runs(
        self, *, person_id: int | None = None, job: str | None = None, limit: int = 1000
    ) -> list[JobRun]:
        sql = "SELECT * FROM job_runs WHERE 1 = 1"
        params: list[object] = []
        if person_id is not None:
            sql += " AND person_id = ?"
            params.append(person_id)
        if job is not None:
            sql += " AND job = ?"
            params.append(job)
        rows = await self.db.fetchall(sql + " ORDER BY id DESC LIMIT ?", [*params, limit])
        return [_run(r) for r in rows]

    async def summary(self, person_id: int | None = None) -> list[JobSummary]:
        """Per job and person: runs, errors, tokens, and the last run."""
        where = "" if person_id is None else " WHERE person_id = ?"
        params: tuple[object, ...] = () if person_id is None else (person_id,)
        rows = await self.db.fetchall(
            "SELECT job, person_id, count(*) AS runs,"
            " count(*) FILTER (WHERE status = 'error') AS errors,"
            " sum(tokens) AS tokens, max(id) AS last_id"
            f" FROM job_runs{where} GROUP BY job, person_id ORDER BY person_id, job",
            params,
        )
        out = []
        for r in rows:
            last = await self.db.fetchone("SELECT * FROM job_runs WHERE id = ?", (r["last_id"],))
            out.append(JobSummary(r["job"], r["person_id"], int(r["runs"]), int(r["errors"] or 0),
                                  int(r["tokens"] or 0), _run(last)))
        return out

    async def failing(self) -> list[JobFailure]:
        """Every job whose last run for someone failed (until a run succeeds), for `doctor`."""
        rows = await self.db.fetchall(
            "SELECT c.job, p.name, c.failures, c.retry_at,"
            " (SELECT r.error FROM job_runs r WHERE r.job = c.job AND r.person_id = c.person_id"
            "  ORDER BY r.id DESC LIMIT 1) AS error"
            " FROM job_cursors c JOIN persons p ON p.id = c.person_id"
            " WHERE c.failures > 0 ORDER BY c.job, p.name")
        return [JobFailure(r["job"], r["name"], int(r["failures"]),
                           from_iso(r["retry_at"]) if r["retry_at"] else None,
                           str(r["error"] or "")) for r in rows]

    async def totals_by_job(self) -> list[tuple[str, int, int, int]]:
        """(job, runs, failed runs, tokens) over every kept run of every person: what the
        operators' metrics show as totals (the decay job prunes old runs)."""
        rows = await self.db.fetchall(
            "SELECT job, count(*) AS runs, count(*) FILTER (WHERE status = 'error') AS errors,"
            " sum(tokens) AS tokens FROM job_runs GROUP BY job ORDER BY job")
        return [(r["job"], int(r["runs"]), int(r["errors"] or 0), int(r["tokens"] or 0))
                for r in rows]


async def failing_jobs(path: str, dim: int) -> list[JobFailure]:
    """The jobs failing now in the store at `path`, opened read-only as it is (doctor's
    view: it opens no repository of its own)."""
    db = await Database.open(path, dim, read_only=True)
    try:
        return await JobRunRepo(db).failing()
    finally:
        await db.close()
