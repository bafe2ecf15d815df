"""`strata worker` as real processes on one PostgreSQL database: two workers share the persons'
jobs and every due job runs once; a worker killed mid-job leaves a lease behind, and another
worker then takes the person over (at once here: the dead worker's pid is gone from this
host, `strata.core.identity`). The fake model server answers over HTTP; its
answers are held back until the test says so, which is how the test makes sure both workers
are up before any job finishes (no sleeps, no timing assertions: waits have deadlines).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from strata.core.clock import ManualClock
from strata.memory.engines.db import Database
from strata.memory.store.episodes import EpisodeRepo, NewEpisode
from tests.conftest import TEST_DIM
from tests.fakes.openai_server import FakeOpenAI, hashed_embedding
from tests.integration.test_run_cli import remind_and_wait, start_run
from tests.memory_helpers import channel, person, turn

ROOT = Path(__file__).parents[2]

needs_postgres = pytest.mark.postgres_only


class Gate:
    """Holds every chat answer of the fake model until opened (a responder that waits)."""

    def __init__(self) -> None:
        self.open = threading.Event()

    def __call__(self, body: dict[str, Any]) -> None:
        self.open.wait(60)
        return None  # then the fake's default answer


class Worker:
    """One `strata -v worker --name NAME` process; its log lines collected by a thread."""

    def __init__(self, env: dict[str, str], name: str) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "strata.app.cli", "-v", "worker", "--name", name],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, env=env, cwd=ROOT)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(30)
        self._reader.join(5)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def wait_for(what: str, check: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


def query(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return list(conn.execute(sql, params).fetchall())


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        w.kill()


async def seed(url: str, n: int) -> None:
    """`n` persons who talked two hours ago, each with one episode to think about."""
    clock = ManualClock(datetime.now(UTC) - timedelta(hours=2))
    db = await Database.open(url, TEST_DIM)
    try:
        for i in range(n):
            p = await person(db, f"p{i:02d}", clock)
            ch = await channel(db, p, f"room{i}", clock)
            ids = await turn(db, ch, p, f"I climb at the Bloc gym on Tuesdays ({i})", clock,
                             reply="Nice.")
            text = f"p{i:02d} climbs at the Bloc gym on Tuesdays"
            await EpisodeRepo(db).insert(
                NewEpisode(owner_id=p.id, channel_id=ch.id, summary=text, source="user",
                           started_at=clock.now(), ended_at=clock.now(), row_ids=tuple(ids)),
                hashed_embedding(text, TEST_DIM), clock.now())
    finally:
        await db.close()


def job_runs(url: str, workers: list[Worker]) -> list[tuple[str, int, str, str]]:
    """The background jobs' runs (not the metered after-turn calls): job, person, worker
    name (told by the pid in the runner's process identity, host:pid:random), status."""
    names = {str(w.proc.pid): w.name for w in workers}
    rows = query(url, "SELECT job, person_id, runner, status FROM job_runs"
                 " WHERE runner IS NOT NULL ORDER BY id")
    return [(str(j), int(p), names.get(str(r).split(":")[1], str(r)), str(s))
            for j, p, r, s in rows]


@needs_postgres
async def test_two_worker_processes_share_the_jobs_and_each_due_job_runs_once(
        pg_url: str, fake_openai: FakeOpenAI, subprocess_env: dict[str, str],
        workers: list[Worker]) -> None:
    await seed(pg_url, 12)
    gate = Gate()
    fake_openai.responder = gate
    env = dict(subprocess_env, STRATA_DB=pg_url, STRATA_COGNITION_TICK_SECONDS="0.2")
    workers.append(Worker(env, "w1"))
    workers.append(Worker(env, "w2"))
    try:
        wait_for("both workers registered",
                 lambda: len(query(pg_url, "SELECT id FROM runners")) == 2)
    finally:
        gate.open.set()
    wait_for("both workers' first job check",
             lambda: all(w.said("job check done") for w in workers))
    assert [w.stop() for w in workers] == [0, 0]
    runs = job_runs(pg_url, workers)
    assert runs, "no job ran"
    per_job = {}
    for job, pid, runner, status in runs:
        per_job.setdefault((job, pid), []).append(runner)
        assert status in ("ok", "error"), (job, pid, status)
    assert all(len(r) == 1 for r in per_job.values()), per_job  # each due job once
    persons = {pid for _, pid in per_job}
    assert len(persons) == 12  # every person's jobs ran …
    by_person = {pid: {r for (_, p), rs in per_job.items() if p == pid for r in rs}
                 for pid in persons}
    assert all(len(r) == 1 for r in by_person.values())  # … each person's in one worker
    assert {r for rs in by_person.values() for r in rs} == {"w1", "w2"}  # both worked
    assert query(pg_url, "SELECT count(*) FROM runners")[0][0] == 0  # both retired cleanly
    assert all("Traceback" not in "".join(w.lines) for w in workers)


@needs_postgres
async def test_a_killed_worker_s_person_is_taken_over_after_its_lease(
        pg_url: str, fake_openai: FakeOpenAI, subprocess_env: dict[str, str],
        workers: list[Worker]) -> None:
    await seed(pg_url, 1)
    gate = Gate()
    fake_openai.responder = gate
    env = dict(subprocess_env, STRATA_DB=pg_url, STRATA_COGNITION_TICK_SECONDS="0.2",
               STRATA_COGNITION_JOB_INTERVAL_MINUTES="0.01",
               STRATA_COGNITION_RUNNER_LEASE_SECONDS="2")
    first = Worker(env, "w1")
    workers.append(first)
    try:
        # w1 holds the person and waits in a model call: kill it there.
        wait_for("w1 in a job", lambda: bool(query(
            pg_url, "SELECT 1 FROM job_runs WHERE status = 'running' AND runner LIKE %s",
            (f"%:{first.proc.pid}:%",))))
        [(job,)] = query(pg_url, "SELECT job FROM job_runs WHERE status = 'running'")
        assert query(pg_url, "SELECT count(*) FROM leases WHERE name LIKE 'job:%%'")[0][0] == 1
        os.kill(first.proc.pid, signal.SIGKILL)
        first.proc.wait(10)
    finally:
        gate.open.set()
    second = Worker(env, "w2")
    workers.append(second)
    wait_for("w2 to redo the job w1 was killed in", lambda: any(
        j == job and r == "w2" and s in ("ok", "error")
        for j, _, r, s in job_runs(pg_url, workers)))
    assert second.stop() == 0
    runs = job_runs(pg_url, workers)
    interrupted = [r for r in runs if r[2] == "w1" and r[3] == "interrupted"]
    assert [(r[0], r[1]) for r in interrupted] == [(job, 1)]
    assert not [r for r in runs if r[3] == "running"]
    # Every job ran once to an end (w1's interrupted one was redone once, by w2).
    finished = [(j, p) for j, p, _, s in runs if s in ("ok", "error")]
    assert len(finished) == len(set(finished))


async def test_run_no_jobs_delivers_a_reminder_and_runs_no_job(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], db_target: Path | str) -> None:
    """`strata run --no-jobs` on this run's engine: the reminder comes, no background job
    runs even with the idle gate at zero and a job check every tick."""
    env = dict(subprocess_env, STRATA_COGNITION_TICK_SECONDS="0.2",
               STRATA_COGNITION_IDLE_MINUTES="0", STRATA_COGNITION_JOB_INTERVAL_MINUTES="0.001")
    proc = start_run(env, "--no-jobs", "--console", "--user", "alice")
    try:
        remind_and_wait(proc, fake_openai)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        assert proc.stderr is not None
        assert "reminders only (no jobs" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    db = await Database.open(db_target, TEST_DIM)
    try:
        jobs = await db.fetchval("SELECT count(*) FROM job_runs WHERE runner IS NOT NULL")
        # Any job check leaves a cursor row per job and person, even with nothing to do.
        checked = await db.fetchval("SELECT count(*) FROM job_cursors")
        runners = await db.fetchval("SELECT count(*) FROM runners")
    finally:
        await db.close()
    assert jobs == 0 and checked == 0  # no job ran, none was even looked at
    assert runners == 0  # and the runner retired on SIGTERM
