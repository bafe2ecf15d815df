"""Several runners on one database: each person's jobs run in exactly one of them, a runner
that stops leaves claims that expire, reminders fire once.

Each runner here has its own `App` and so its own `Database` object (connections, locks, pool)
over one SQLite file or one PostgreSQL database, as separate processes would; they share the
injected clock, which is how a test makes a lease run out. The real processes (`strata
worker`) are in test_worker_processes.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import pytest

from strata.app.cli.jobs import cmd_jobs_status
from strata.app.compose import App
from strata.cognition.registry import BaseJob, JobContext, JobOutcome, JobRegistry
from strata.cognition.runner import Runner
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.identity import ProcessIdentity
from strata.core.types import Person
from strata.memory.coordination.claims import RunnerLeases
from tests.integration.conftest import AppFactory
from tests.memory_helpers import channel, person

LEASE = timedelta(seconds=120)  # the default runner_lease_seconds


class Recorded(BaseJob):
    """A job whose input is a version the test moves; each run is recorded with its runner."""

    def __init__(self, name: str, log: list[tuple[str, str, str]], runner: str,
                 hold: Callable[[JobContext], Awaitable[None]] | None = None) -> None:
        self.name = name
        self.description = "test job"
        self.version = "v1"
        self.log = log
        self.runner = runner
        self.hold = hold

    async def inputs(self, ctx: JobContext) -> str | None:
        return self.version

    async def run(self, ctx: JobContext) -> JobOutcome:
        self.log.append((self.runner, ctx.person.name, self.name))
        if self.hold is not None:
            await self.hold(ctx)
        await asyncio.sleep(0)  # let the other runner in between any two steps
        return JobOutcome(f"did {ctx.inputs}")


def runner(app: App, name: str, jobs: list[BaseJob]) -> Runner:
    assert app.services is not None
    # A process of its own: its own identity, so its claims are its own.
    return Runner(app.services, JobRegistry(jobs), name=name,  # type: ignore[arg-type]
                  identity=ProcessIdentity.mint(name))


async def people(app: App, clock: ManualClock, n: int) -> list[Person]:
    return [await person(app.db, f"p{i:02d}", clock) for i in range(n)]


async def test_two_runners_take_disjoint_persons_and_every_due_job_runs_once(
        make_app: AppFactory, clock: ManualClock) -> None:
    one, two = await make_app(), await make_app()
    log: list[tuple[str, str, str]] = []
    both_working, started = asyncio.Event(), [0]

    async def meet(ctx: JobContext) -> None:  # the first job waits until the other runner's
        started[0] += 1
        if started[0] >= 2:
            both_working.set()
        await asyncio.wait_for(both_working.wait(), 10)

    first = [Recorded("a", log, "one", hold=meet), Recorded("b", log, "one")]
    second = [Recorded("a", log, "two", hold=meet), Recorded("b", log, "two")]
    r1, r2 = runner(one, "one", list(first)), runner(two, "two", list(second))
    persons = await people(one, clock, 12)
    reports = await asyncio.gather(r1.check_jobs(), r2.check_jobs())

    ran = [(who, job) for _, who, job in log]
    assert sorted(ran) == sorted((p.name, j) for p in persons for j in ("a", "b"))
    by_person = {who: {r for r, w, _ in log if w == who} for _, who, _ in log}
    assert all(len(runners) == 1 for runners in by_person.values())  # one runner per person
    assert {r for r, _, _ in log} == {"one", "two"}  # both did work
    skipped = [r for rs in reports for r in rs if r.detail.startswith("another process")]
    assert skipped  # each saw persons the other one held
    # Nothing new since: a second round by both runs nothing.
    await asyncio.gather(r1.check_jobs(), r2.check_jobs())
    assert len(log) == 24
    # A new input: each person's job runs once more, in one of them.
    for job in (*first, *second):
        job.version = "v2"
    await asyncio.gather(r1.check_jobs(), r2.check_jobs())
    assert sorted((who, job) for _, who, job in log[24:]) == sorted(
        (p.name, j) for p in persons for j in ("a", "b"))
    runs = await one.services.runs.runs(limit=1000)  # type: ignore[union-attr]
    assert len(runs) == 48 and all(r.status == "ok" for r in runs)
    assert {r.job for r in runs} == {"a", "b"}


async def test_a_runner_that_stops_leaves_a_lease_that_expires_and_another_takes_over(
        make_app: AppFactory, clock: ManualClock) -> None:
    one, two = await make_app(), await make_app()
    log: list[tuple[str, str, str]] = []
    holding = asyncio.Event()

    async def hang(ctx: JobContext) -> None:  # the process "dies" here: never returns
        holding.set()
        await asyncio.Event().wait()

    r1 = runner(one, "one", [Recorded("a", log, "one", hold=hang)])
    r2 = runner(two, "two", [Recorded("a", log, "two")])
    [alice] = await people(one, clock, 1)
    stuck = asyncio.create_task(r1.check_jobs())
    try:
        await asyncio.wait_for(holding.wait(), 10)
        assert await two.services.leases.holder(alice.id, clock.now()) == r1.id  # type: ignore[union-attr]
        # While runner one's lease lasts, runner two leaves alice (and her open run) alone.
        clock.advance(seconds=LEASE.total_seconds() - 1)
        [report] = await r2.tick()
        assert report.status == "skipped" and r1.id in report.detail
        runs = await two.services.runs.runs(person_id=alice.id)  # type: ignore[union-attr]
        assert [r.status for r in runs] == ["running"]
        # Runner one renews nothing (its process is gone): after its lease, two takes over
        # at its next job check, and closes the run one left open.
        clock.advance(minutes=5)
        [report] = await r2.tick()
        assert report.status == "ok"
        assert log == [("one", "p00", "a"), ("two", "p00", "a")]
        runs = await two.services.runs.runs(person_id=alice.id)  # type: ignore[union-attr]
        assert [r.status for r in runs] == ["ok", "interrupted"]
    finally:
        stuck.cancel()
        await asyncio.gather(stuck, return_exceptions=True)


async def test_a_live_runner_keeps_its_claims_by_renewing_its_lease(
        make_app: AppFactory, clock: ManualClock) -> None:
    one, two = await make_app(), await make_app()
    r1, r2 = runner(one, "one", []), runner(two, "two", [])
    [alice] = await people(one, clock, 1)
    leases: RunnerLeases = one.services.leases  # type: ignore[union-attr]
    await r1.start_up()
    assert await leases.claim(alice.id, r1.id, clock.now())
    for _ in range(5):  # ten minutes, a heartbeat every two
        clock.advance(minutes=2)
        await r1.heartbeat()
        assert not await leases.claim(alice.id, r2.id, clock.now())
    await r1.stop()  # a clean stop gives everything back at once
    assert await leases.claim(alice.id, r2.id, clock.now())


async def test_a_restart_under_the_same_name_frees_its_previous_claims_at_once(
        make_app: AppFactory, clock: ManualClock) -> None:
    one, again, other = await make_app(), await make_app(), await make_app()
    [alice, bob] = await people(one, clock, 2)
    leases: RunnerLeases = one.services.leases  # type: ignore[union-attr]
    before, live = runner(one, "host:7", []), runner(other, "host:8", [])
    await before.start_up()
    await live.start_up()
    assert await leases.claim(alice.id, before.id, clock.now())
    assert await leases.claim(bob.id, live.id, clock.now())
    run = await one.services.runs.start("a", alice.id, clock.now(), before.id)  # type: ignore[union-attr]
    after = runner(again, "host:7", [])  # the same process name, a new life
    await after.start_up()
    assert await leases.claim(alice.id, after.id, clock.now())
    assert not await leases.claim(bob.id, after.id, clock.now())  # another live process's
    [old] = await one.services.runs.runs(person_id=alice.id)  # type: ignore[union-attr]
    assert old.id == run and old.status == "interrupted"
    # Runners gone for more than a day are not kept; the live ones are.
    clock.advance(days=2)
    await after.heartbeat()
    await runner(other, "host:9", []).start_up()
    names = {r.name for r in await leases.live(clock.now())}
    rows = {str(r[0]) for r in await one.db.fetchall("SELECT name FROM runners")}
    assert names == rows == {"host:7", "host:9"}


def exited_pid() -> int:
    """The pid of a process that ran and exited: a real dead process of this host."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


async def test_a_runner_whose_process_died_on_this_host_frees_its_claims_at_once(
        make_app: AppFactory, clock: ManualClock) -> None:
    """Within its lease, a crashed runner's person claim, open run and reminder claim are
    free at the next start-up, as a dead process's channel leases are; a runner on another
    host is waited out."""
    one, two = await make_app(), await make_app()
    [alice, bob] = await people(one, clock, 2)
    chat = await channel(one.db, alice, "a", clock)
    services = one.services
    assert services is not None
    leases, now, pid = services.leases, clock.now(), exited_pid()
    here = ProcessIdentity.mint()
    crashed = ProcessIdentity(here.host, pid, "dead0000", "crashed")
    away = ProcessIdentity(f"not-{here.host}", pid, "away0000", "away")
    for gone in (crashed, away):  # what each left: a row with a lease still running
        await leases.register(gone.id, gone.name, now, LEASE)
    assert await leases.claim(alice.id, crashed.id, now)
    assert await leases.claim(bob.id, away.id, now)
    run = await services.runs.start("a", alice.id, now, crashed.id)
    made = await services.reminders.add(owner_id=alice.id, channel_id=chat.id,
                                        kind="reminder", text="tea", due_at=now,
                                        timezone="UTC", now=now)
    assert await services.reminders.claim(made, now, crashed.id)

    fresh = runner(two, "fresh", [])
    await fresh.start_up()  # the clock has not moved: only the dead process is seen through
    assert await leases.holder(alice.id, now) is None
    assert await leases.holder(bob.id, now) == away.id
    assert await leases.claim(alice.id, fresh.id, now)
    [old] = await services.runs.runs(person_id=alice.id)
    assert old.id == run and old.status == "interrupted"
    got = await services.reminders.get(made.id)
    assert got is not None and got.state == "pending"
    assert {r.id for r in await leases.live(now)} == {away.id, fresh.id}


async def test_a_starting_runner_leaves_a_live_runners_reminder_claim_alone(
        make_app: AppFactory, clock: ManualClock) -> None:
    """A reminder claimed by a process that is sending it is not released by another
    process's start-up: it is sent once. Only after the sender's lease ran out is it freed."""
    one, two = await make_app(), await make_app()
    [alice] = await people(one, clock, 1)
    chat = await channel(one.db, alice, "a", clock)
    reminders = one.services.reminders  # type: ignore[union-attr]
    due = clock.now() + timedelta(minutes=5)
    made = await reminders.add(owner_id=alice.id, channel_id=chat.id, kind="reminder",
                               text="tea", due_at=due, timezone="UTC", now=clock.now())
    r1, r2 = runner(one, "one", []), runner(two, "two", [])
    clock.advance(minutes=5)
    await r1.start_up()
    assert await reminders.claim(made, clock.now(), r1.id)
    await reminders.sending(made.id, clock.now())
    await r2.start_up()
    await r2.tick()
    got = await reminders.get(made.id)
    assert got is not None and got.state == "claimed"
    clock.advance(seconds=LEASE.total_seconds() + 1)
    await r2.tick()  # runner one is gone now: its claim is freed (the send may have happened)
    got = await reminders.get(made.id)
    assert got is not None and (got.state, got.unconfirmed) == ("pending", 1)


async def test_two_runners_deliver_every_reminder_exactly_once(
        make_app: AppFactory, clock: ManualClock) -> None:
    one, two = await make_app(), await make_app()
    sent: list[tuple[str, str]] = []

    def platform(name: str) -> Callable[[str, str], Awaitable[list[str]]]:
        async def send(room: str, text: str) -> list[str]:
            sent.append((name, text))
            await asyncio.sleep(0)
            return []
        return send

    one.outbound.register("console", platform("one"))
    two.outbound.register("console", platform("two"))
    [alice] = await people(one, clock, 1)
    chat = await channel(one.db, alice, "a", clock)
    for i in range(30):
        await one.services.reminders.add(  # type: ignore[union-attr]
            owner_id=alice.id, channel_id=chat.id, kind="reminder", text=f"r{i}",
            due_at=clock.now() + timedelta(minutes=1), timezone="UTC", now=clock.now())
    r1, r2 = runner(one, "one", []), runner(two, "two", [])
    clock.advance(minutes=1)
    await asyncio.gather(r1.tick(), r2.tick())
    await asyncio.gather(r1.tick(), r2.tick())
    assert sorted(text for _, text in sent) == sorted(f"⏰ Reminder: r{i}" for i in range(30))
    states = {r.state for r in await one.services.reminders.for_owner(alice.id)}  # type: ignore[union-attr]
    assert states == {"delivered"}


async def test_run_no_jobs_delivers_reminders_but_runs_no_job(
        make_app: AppFactory, clock: ManualClock) -> None:
    app = await make_app(jobs=False)
    log: list[tuple[str, str, str]] = []
    assert app.services is not None
    quiet = Runner(app.services, JobRegistry([Recorded("a", log, "one")]))  # type: ignore[list-item]
    sent: list[str] = []

    async def send(room: str, text: str) -> list[str]:
        sent.append(text)
        return []

    app.outbound.register("console", send)
    [alice] = await people(app, clock, 1)
    chat = await channel(app.db, alice, "a", clock)
    await app.services.reminders.add(owner_id=alice.id, channel_id=chat.id, kind="reminder",
                                      text="tea", due_at=clock.now() + timedelta(minutes=1),
                                      timezone="UTC", now=clock.now())
    clock.advance(minutes=1)
    assert await quiet.tick() == []
    assert sent == ["⏰ Reminder: tea"] and log == []


async def test_racing_claims_from_four_connections_have_one_winner_per_person(
        db_target: Path | str, clock: ManualClock) -> None:
    """Claims do not take the engine's write lock on PostgreSQL (`execute_atomic`): the
    statement alone must make one winner, with four databases claiming at once."""
    from strata.memory.engines.db import Database
    from tests.conftest import TEST_DIM

    dbs = [await Database.open(db_target, TEST_DIM) for _ in range(4)]
    try:
        persons = [await person(dbs[0], f"p{i:02d}", clock) for i in range(20)]
        leases = [RunnerLeases(db) for db in dbs]
        for i, repo in enumerate(leases):
            await repo.register(f"r{i}/x", f"r{i}", clock.now(), LEASE)
        won = await asyncio.gather(*[
            leases[i].claim(p.id, f"r{i}/x", clock.now())
            for p in persons for i in range(4) for _ in range(2)])
        per_person = [won[k * 8:(k + 1) * 8] for k in range(20)]
        holders = [await leases[0].holder(p.id, clock.now()) for p in persons]
        for wins, holder in zip(per_person, holders, strict=True):
            # The winner's own repeat claim also succeeds (it is already its own): one or
            # two wins, all by the same runner.
            winners = {f"r{i}/x" for i in range(4) for j in range(2) if wins[i * 2 + j]}
            assert winners == {holder}
    finally:
        for db in dbs:
            await db.close()


async def test_a_runner_stalled_past_its_lease_stops_before_its_next_job(
        make_app: AppFactory, clock: ManualClock) -> None:
    """Runner one stalls in a job past its lease (a paused machine) and runner two takes the
    person over; when one wakes up, its run of that job is lost (fenced: not recorded, see
    test_job_fence.py) and it runs none of the person's next."""
    one, two = await make_app(), await make_app()
    log: list[tuple[str, str, str]] = []
    stalled, wake = asyncio.Event(), asyncio.Event()

    async def stall(ctx: JobContext) -> None:
        stalled.set()
        await wake.wait()

    r1 = runner(one, "one", [Recorded("a", log, "one", hold=stall), Recorded("b", log, "one")])
    r2 = runner(two, "two", [Recorded("a", log, "two"), Recorded("b", log, "two")])
    [alice] = await people(one, clock, 1)
    first = asyncio.create_task(r1.check_jobs())
    await asyncio.wait_for(stalled.wait(), 10)
    clock.advance(seconds=LEASE.total_seconds() + 1)
    async with r2.claimed(alice) as holder:  # two is working on alice when one wakes up
        assert holder is None
        wake.set()
        reports = await asyncio.wait_for(first, 10)
    assert [r.status for r in reports] == ["lost", "skipped"]
    assert r2.id in reports[0].detail and r2.id in reports[1].detail
    assert log == [("one", "p00", "a")]
    runs = await one.services.runs.runs(person_id=alice.id)  # type: ignore[union-attr]
    assert [r.status for r in runs] == ["interrupted"]


async def test_jobs_status_names_the_live_runners_and_who_holds_each_person(
        make_app: AppFactory, clock: ManualClock, settings: Settings,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`strata jobs status` on a database shared by several processes: which are alive, and
    which one holds each person's jobs; a runner whose lease ran out holds nobody."""
    one, two = await make_app(), await make_app()
    alice, _ = await people(one, clock, 2)
    first, second = runner(one, "host:7", []), runner(two, "host:9", [])
    await first.start_up()
    await second.start_up()
    leases = RunnerLeases(one.db)
    assert await leases.claim(alice.id, first.id, clock.now())

    assert await cmd_jobs_status(argparse.Namespace(user=None, json=True,
                                                    now=clock.now().isoformat()), settings) == 0
    rows = json.loads(capsys.readouterr().out)
    held = {(r["person"], r["held_by"]) for r in rows}
    assert held == {("p00", "host:7"), ("p01", None)}
    assert await cmd_jobs_status(argparse.Namespace(user="p00", json=False,
                                                    now=clock.now().isoformat()), settings) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("runners: host:7 (since ") and ", host:9 (since " in text[0]
    assert "held by" in text[1]
    assert all("host:7" in line for line in text[2:]) and len(text) > 2
    # Both processes gone quiet: past the lease nobody is alive and alice is free again.
    clock.advance(seconds=LEASE.total_seconds() + 1)
    assert await cmd_jobs_status(argparse.Namespace(user="p00", json=False,
                                                    now=clock.now().isoformat()), settings) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("runners: none alive")
    assert not any("host:7" in line for line in text[2:])


async def test_jobs_status_does_not_call_a_killed_process_a_live_runner(
        make_app: AppFactory, clock: ManualClock, settings: Settings,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 35, defect 9: a runner of this host whose process is gone (`kill -9`) is not
    listed as alive while its lease runs out, and holds nobody's jobs."""
    one, two = await make_app(), await make_app()
    alice, bob = await people(one, clock, 2)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = ProcessIdentity(socket.gethostname(), int(gone.stdout), "deadbeef", "killed")
    alive = runner(one, "alive", [])
    await alive.start_up()
    leases = RunnerLeases(two.db)  # what the killed process wrote while it lived
    await leases.register(dead.id, dead.name, clock.now(), LEASE)
    assert await leases.claim(alice.id, dead.id, clock.now())
    assert await leases.claim(bob.id, alive.id, clock.now())

    args = argparse.Namespace(user=None, json=False, now=clock.now().isoformat())
    assert await cmd_jobs_status(args, settings) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("runners: alive (since ") and "killed" not in text[0]
    assert text[1].startswith("presumed dead: killed (process ") and "no longer runs" in text[1]
    alices = [line for line in text if line.startswith("p00")]
    bobs = [line for line in text if line.startswith("p01")]
    assert alices and not any("killed" in line or "alive" in line for line in alices)
    assert bobs and all("alive" in line for line in bobs)
    assert await cmd_jobs_status(argparse.Namespace(user=None, json=True,
                                                    now=clock.now().isoformat()), settings) == 0
    held = {(r["person"], r["held_by"]) for r in json.loads(capsys.readouterr().out)}
    assert held == {("p00", None), ("p01", "alive")}


async def test_a_runner_that_stops_closes_the_runs_it_left_open(
        make_app: AppFactory, clock: ManualClock) -> None:
    """A stop can cancel a job between its `running` row's commit and the moment the runner
    learns the row's id (seen on PostgreSQL: the commit went through, the cancellation came
    before its answer), so the job's own `cancelled` bookkeeping never runs. A clean stop
    closes whatever this runner still has open, and only that."""
    one, two = await make_app(), await make_app()
    r1, r2 = runner(one, "one", []), runner(two, "two", [])
    [alice] = await people(one, clock, 1)
    await r1.start_up()
    await r2.start_up()
    runs = one.services.runs  # type: ignore[union-attr]
    orphan = await runs.start("a", alice.id, clock.now(), r1.id)  # the id the cancel lost
    other = await runs.start("b", alice.id, clock.now(), r2.id)  # a live runner's open run
    await r1.stop()
    by_id = {r.id: r for r in await runs.runs(person_id=alice.id)}
    assert by_id[orphan].status == "interrupted" and by_id[orphan].finished_at is not None
    assert by_id[other].status == "running"
    await r2.stop()
