"""The fence: a runner that lost a person mid-job (stalled past its lease while another runner
took the person) records no run and writes nothing more; the new holder's run is the one
recorded, once.

Each runner has its own `App`, and so its own `Database` object, over one SQLite file or one
PostgreSQL database, as separate processes would; they share the injected clock, which is how
a lease runs out here. A runner "stalls" by waiting on an event in a test job, or on the fake
model's closed gate (real HTTP) in the real `patterns` job.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from strata.app.compose import App
from strata.cognition.job_report import JobReport
from strata.cognition.jobs.common import add_fact
from strata.cognition.jobs.patterns import PatternMatchJob
from strata.cognition.registry import BaseJob, JobContext, JobOutcome, JobRegistry
from strata.cognition.runner import Runner
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.errors import WriteRefusedError
from strata.core.identity import ProcessIdentity
from strata.core.types import Person
from strata.memory.coordination.claims import RunnerLeases
from tests.conftest import TEST_DIM
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.conftest import AppFactory
from tests.memory_helpers import person

from .test_turn_takeover import until
from .test_turns import msg

LEASE = timedelta(seconds=120)  # the default runner_lease_seconds


class Noting(BaseJob):
    """Writes a fact through the facts' own write path before and after an optional stall."""

    def __init__(self, who: str, stall: asyncio.Event | None = None) -> None:
        self.name = "noting"
        self.description = "test job"
        self.who = who
        self.stall = stall
        self.stalled = asyncio.Event()

    async def inputs(self, ctx: JobContext) -> str | None:
        return "v1"

    async def run(self, ctx: JobContext) -> JobOutcome:
        await add_fact(ctx, "user_specific", "Alice grows tomatoes", "user")
        if self.stall is not None:
            self.stalled.set()
            await self.stall.wait()
        await add_fact(ctx, "user_specific", f"Alice told {self.who} about her garden", "user")
        return JobOutcome(f"{self.who} noted")


def runner(app: App, name: str, jobs: list[Any]) -> Runner:
    assert app.services is not None
    return Runner(app.services, JobRegistry(jobs), name=name,
                  identity=ProcessIdentity.mint(name))


async def facts(app: App, alice: Person) -> list[str]:
    return sorted(f.text for f in await app.facts.repo.for_owner(alice.id))


async def runs(app: App, job: str) -> list[tuple[str, str]]:
    rows = await app.db.fetchall("SELECT runner, status FROM job_runs WHERE job = ? ORDER BY id",
                                 (job,))
    return [(str(r[0]), str(r[1])) for r in rows]


async def take_over(r1: Runner, r2: Runner, alice: Person, clock: ManualClock,
                    first: asyncio.Task[JobReport], wake: Callable[[], None], job: str,
                    **kw: Any) -> tuple[JobReport, JobReport]:
    """Runner one is stalled inside `first`: its lease runs out, two claims alice, and while
    two holds her one wakes up (alive again: `wake` ends its stall); then two runs `job`.
    Returns one's report and two's."""
    clock.advance(seconds=LEASE.total_seconds() + 1)
    async with r2.claimed(alice) as holder:
        assert holder is None
        await r1.heartbeat()
        wake()
        lost = await asyncio.wait_for(first, 30)
        done = await r2.run_job(r2.registry.get(job), alice, **kw)
    return lost, done


async def test_a_runner_that_lost_the_person_mid_job_records_no_run_and_writes_nothing(
        make_app: AppFactory, clock: ManualClock) -> None:
    """Runner one stalls inside a job past its lease; runner two takes the person, runs the
    job and gives the person back; one wakes up (alive again) and goes on. Its writes after
    the takeover are refused, its run is not recorded, and its next pass finds nothing new."""
    one, two = await make_app(), await make_app()
    wake = asyncio.Event()
    stalled_job = Noting("one", stall=wake)
    r1, r2 = runner(one, "one", [stalled_job]), runner(two, "two", [Noting("two")])
    alice = await person(one.db, "alice", clock)
    first = asyncio.create_task(r1.check_jobs([alice]))
    await asyncio.wait_for(stalled_job.stalled.wait(), 10)

    clock.advance(seconds=LEASE.total_seconds() + 1)  # one's lease runs out mid-job
    [taken] = await r2.tick()
    assert taken.status == "ok"
    await r1.heartbeat()  # one is alive again (a paused machine resumed)
    wake.set()
    [lost] = await asyncio.wait_for(first, 10)

    assert lost.status == "lost" and lost.ran
    # What one wrote while it held alice stays; nothing after the takeover does.
    assert await facts(one, alice) == ["Alice grows tomatoes",
                                       "Alice told two about her garden"]
    assert await runs(one, "noting") == [(r1.id, "interrupted"), (r2.id, "ok")]
    cursor = await one.services.runs.cursor("noting", alice.id)  # type: ignore[union-attr]
    assert cursor is not None and cursor.cursor == "v1"
    # One's next pass takes alice back (nobody holds her) and finds nothing new to do.
    [again] = await r1.check_jobs([alice])
    assert (again.status, again.detail) == ("skipped", "nothing new")
    assert [s for _, s in await runs(one, "noting")] == ["interrupted", "ok"]


async def test_a_runner_that_wakes_while_the_new_holder_works_is_refused_too(
        make_app: AppFactory, clock: ManualClock) -> None:
    """The takeover is still going on (runner two holds alice) when one wakes: one's run and
    its writes are refused all the same, and two's run is recorded."""
    one, two = await make_app(), await make_app()
    wake = asyncio.Event()
    stalled_job = Noting("one", stall=wake)
    r1, r2 = runner(one, "one", [stalled_job]), runner(two, "two", [Noting("two")])
    alice = await person(one.db, "alice", clock)
    first = asyncio.create_task(r1.run_job(stalled_job, alice, force=True))
    await asyncio.wait_for(stalled_job.stalled.wait(), 10)
    lost, done = await take_over(r1, r2, alice, clock, first, wake.set, "noting", force=True)
    assert lost.status == "lost" and r2.id in lost.detail
    assert done.status == "ok"
    assert await facts(one, alice) == ["Alice grows tomatoes",
                                       "Alice told two about her garden"]
    assert await runs(one, "noting") == [(r1.id, "interrupted"), (r2.id, "ok")]


@pytest.fixture
async def slow_model() -> AsyncIterator[FakeOpenAI]:
    """A second fake model server, for one runner's app: its gate holds that runner alone."""
    with FakeOpenAI(dim=TEST_DIM) as server:
        yield server


async def test_a_stalled_model_answer_of_the_patterns_job_is_not_stored(
        make_app: AppFactory, clock: ManualClock, settings: Settings,
        fake_openai: FakeOpenAI, slow_model: FakeOpenAI) -> None:
    """The real `patterns` job: runner one waits on its model past its lease while runner two
    takes alice over. One's late answer is refused (no reply row, no pattern fact, no run);
    two then completes the same background turn and its patterns are the ones kept."""
    two = await make_app()
    slow = settings.model_copy(update={
        "llm": settings.llm.model_copy(update={"base_url": slow_model.base_url}),
        "episodes": settings.episodes.model_copy(update={"use_model": False})})
    one = await App.create(slow, clock=clock, identity=ProcessIdentity.mint())
    try:
        def patterns(text: str) -> Callable[[dict[str, Any]], str | None]:
            def answer(body: dict[str, Any]) -> str | None:
                if "behavioural patterns" in str(body["messages"]):
                    cited = [int(n) for n in re.findall(r"\[(\d+) \w{3} \d\d:\d\d\]",
                                                        str(body["messages"]))]
                    return json.dumps({"patterns": [{"pattern": text, "rows": cited,
                                                     "tool": None}]})
                return None
            return answer

        slow_model.responder = patterns("Alice waters her plants (stale)")
        fake_openai.responder = patterns("Alice waters her plants every evening")
        for _ in range(3):
            await two.processor.handle(msg("I water the plants tonight", user="alice",
                                           clock=clock))
            clock.advance(days=1)
        await two.processor.drain()
        alice = await two.persons.find("alice")
        assert alice is not None
        r1, r2 = runner(one, "one", [PatternMatchJob()]), runner(two, "two", [PatternMatchJob()])

        slow_model.close_gate()
        first = asyncio.create_task(r1.run_job(r1.registry.get("patterns"), alice))
        await until("runner one to ask its model", lambda: slow_model.gated)
        lost, done = await take_over(r1, r2, alice, clock, first, slow_model.open_gate,
                                     "patterns")
        assert lost.status == "lost" and r2.id in lost.detail
        assert done.status == "ok" and "1 new patterns" in done.detail

        kept = [f.text for f in await two.facts.repo.for_owner(
            alice.id, kinds=["behavioral_pattern"])]
        assert kept == ["Alice waters her plants every evening"]
        replies = await two.db.fetchall(
            "SELECT content FROM transcript WHERE role = 'assistant' AND kind = 'message'"
            " AND turn_id LIKE 'job:patterns:%'")
        assert [json.loads(str(r[0]))["patterns"][0]["pattern"] for r in replies] == [
            "Alice waters her plants every evening"]
        assert [s for _, s in await runs(two, "patterns")] == ["interrupted", "ok"]
        assert (await runs(two, "patterns"))[1][0] == r2.id
    finally:
        await one.close()


async def test_a_fenced_write_goes_through_only_while_the_claim_is_the_same(
        db_target: Path | str, clock: ManualClock) -> None:
    """The fence below the runner: a claim's token; writes of the task inside `fenced` are
    checked against it in their own transaction; other tasks' writes are not."""
    from strata.memory.engines.db import Database

    db = await Database.open(db_target, TEST_DIM)
    try:
        leases = RunnerLeases(db)
        alice = await person(db, "alice", clock)
        for name in ("one", "two"):
            await leases.register(name, name, clock.now(), LEASE)
        token = await leases.claim(alice.id, "one", clock.now())
        assert token
        assert await leases.claim(alice.id, "one", clock.now()) == token  # still the same hold

        async def write(text: str) -> None:
            await db.execute_write("INSERT INTO leases (name, holder, expires_at)"
                                   " VALUES (?, 'x', '2026-01-05')", (text,))

        with leases.fenced(alice.id, "one", token):
            await write("held")
            clock.advance(seconds=LEASE.total_seconds() + 1)
            assert await leases.claim(alice.id, "two", clock.now())  # one's lease ran out
            with pytest.raises(WriteRefusedError):
                await write("after the takeover")
            with pytest.raises(WriteRefusedError):
                await leases.release(alice.id, "one")  # every kind of write is checked
            await asyncio.create_task(write("another task"))  # not this task's fence
        await write("outside")
        await leases.release(alice.id, "two")
        again = await leases.claim(alice.id, "one", clock.now())
        assert again and again != token  # a new hold: the old token stays refused
        with leases.fenced(alice.id, "one", token), pytest.raises(WriteRefusedError):
            await write("with the old token")
        keys = {str(r[0]) for r in await db.fetchall("SELECT name FROM leases")}
        assert {"held", "another task", "outside"} <= keys
        assert not keys & {"after the takeover", "with the old token"}
    finally:
        await db.close()
