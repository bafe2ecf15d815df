"""The cognition runner: idle gate, isolation, recording, watermarks, background turns.

Real database, fake model server over HTTP, an injected clock; the runner is driven by
`tick()` / `check_jobs()` after the clock is moved, never by sleeping.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from datetime import timedelta

import pytest

from strata.app.compose import App
from strata.cognition.registry import BaseJob, JobContext, JobOutcome, JobRegistry
from strata.cognition.runner import Runner
from strata.core.clock import ManualClock
from strata.core.errors import ModelError
from strata.core.types import Person
from strata.memory.store.episodes import EpisodeRepo, NewEpisode
from tests.fakes.openai_server import FakeOpenAI, hashed_embedding

from .test_turns import msg

AppFactory = Callable[..., Awaitable[App]]


class CountingJob(BaseJob):
    """A job whose input is a counter the test moves; records each run."""

    def __init__(self, name: str, on_run: Callable[[JobContext], Awaitable[None]] | None = None,
                 fail: bool = False) -> None:
        self.name = name
        self.description = "test job"
        self.inputs_value = "v1"
        self.ran: list[str] = []
        self.on_run = on_run
        self.fail = fail

    async def inputs(self, ctx: JobContext) -> str | None:
        return self.inputs_value

    async def run(self, ctx: JobContext) -> JobOutcome:
        if self.on_run is not None:
            await self.on_run(ctx)
        if self.fail:
            raise RuntimeError("boom in " + self.name)
        self.ran.append(ctx.inputs)
        return JobOutcome(f"did {ctx.inputs}")


async def speak(app: App, clock: ManualClock, text: str = "hello", user: str = "alice") -> Person:
    await app.processor.handle(msg(text, user=user, clock=clock))
    await app.processor.drain()  # after-turn work done before the test moves the clock
    person = await app.persons.find(user)
    assert person is not None
    return person


async def test_no_job_before_30_idle_minutes_and_a_message_pushes_all_back(
        make_app: AppFactory, clock: ManualClock) -> None:
    app = await make_app()
    a, b = CountingJob("a"), CountingJob("b")
    runner = Runner(app.services, JobRegistry([a, b]))  # type: ignore[arg-type]
    await speak(app, clock)
    clock.advance(minutes=29)
    reports = await runner.check_jobs()
    assert a.ran == [] and b.ran == []
    assert all(r.status == "skipped" and "active" in r.detail for r in reports)
    await speak(app, clock, "still here")  # minute 29: everything waits 30 more minutes
    clock.advance(minutes=29)
    await runner.check_jobs()
    assert a.ran == [] and b.ran == []
    clock.advance(minutes=1)
    await runner.check_jobs()
    assert a.ran == ["v1"] and b.ran == ["v1"]


async def test_real_jobs_make_no_model_call_while_the_person_is_active(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    assert app.runner is not None
    await speak(app, clock, "I climb at the Bloc gym on Tuesdays")
    await EpisodeRepo(app.db).insert(
        NewEpisode(owner_id=1, channel_id=1, summary="Alice climbs on Tuesdays", source="user",
                   started_at=clock.now(), ended_at=clock.now(), row_ids=(1,)),
        hashed_embedding("Alice climbs on Tuesdays", app.db.dim), clock.now())
    before = len(fake_openai.chat_requests())
    clock.advance(minutes=29, seconds=59)
    reports = await app.runner.check_jobs()
    assert len(fake_openai.chat_requests()) == before
    assert not any(r.ran for r in reports)
    clock.advance(seconds=1)
    reports = await app.runner.check_jobs()
    assert any(r.job == "dmn" and r.status == "ok" for r in reports)
    assert len(fake_openai.chat_requests()) > before


async def test_activity_during_a_check_stops_the_jobs_still_waiting(
        make_app: AppFactory, clock: ManualClock) -> None:
    app = await make_app()

    async def person_writes(ctx: JobContext) -> None:
        await app.processor.handle(msg("back again", clock=clock))

    first, second = CountingJob("first", on_run=person_writes), CountingJob("second")
    runner = Runner(app.services, JobRegistry([first, second]))  # type: ignore[arg-type]
    await speak(app, clock)
    clock.advance(minutes=31)
    reports = await runner.check_jobs()
    assert first.ran == ["v1"] and second.ran == []
    assert reports[1].status == "skipped" and "active 0 min ago" in reports[1].detail


async def test_a_failing_job_is_recorded_and_the_others_go_on(
        make_app: AppFactory, clock: ManualClock) -> None:
    app = await make_app()
    boom, after = CountingJob("boom", fail=True), CountingJob("after")
    runner = Runner(app.services, JobRegistry([boom, after]))  # type: ignore[arg-type]
    alice = await speak(app, clock)
    await speak(app, clock, user="bob")
    clock.advance(hours=1)
    reports = await runner.check_jobs()
    assert [(r.job, r.person, r.status) for r in reports] == [
        ("boom", "alice", "error"), ("after", "alice", "ok"),
        ("boom", "bob", "error"), ("after", "bob", "ok")]
    assert after.ran == ["v1", "v1"]
    runs = await app.services.runs.runs(person_id=alice.id, job="boom")
    assert runs[0].status == "error" and "boom in boom" in (runs[0].error or "")
    # The failed job's cursor did not move: it is tried again at the next check.
    clock.advance(minutes=5)
    boom.fail = False
    await runner.check_jobs()
    assert boom.ran == ["v1", "v1"]


async def test_a_job_failing_on_the_model_logs_one_line_not_a_traceback(
        make_app: AppFactory, clock: ManualClock, caplog: pytest.LogCaptureFixture) -> None:
    """A model or embedder that is down (or answers unusable vectors) is an expected fault:
    the run is recorded as failed and retried later, and the log says so in one line."""

    async def down(ctx: JobContext) -> None:
        raise ModelError("the embedding endpoint answered an unusable vector")

    app = await make_app()
    runner = Runner(app.services, JobRegistry([CountingJob("embeds", on_run=down)]))  # type: ignore[arg-type]
    await speak(app, clock)
    clock.advance(hours=1)
    caplog.clear()
    reports = await runner.check_jobs()
    assert [(r.job, r.status) for r in reports] == [("embeds", "error")]
    failed = [r for r in caplog.records if "embeds" in r.getMessage()]
    assert failed and all(r.exc_info is None for r in failed)
    assert "unusable vector" in failed[0].getMessage()


def dmn_calls(fake: FakeOpenAI) -> int:
    """Model calls made by the DMN itself (not by after-turn work on its rows)."""
    return sum("quiet time between conversations" in str(r["messages"])
               for r in fake.chat_requests())


async def test_nothing_new_means_no_run_and_no_model_call(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    assert app.runner is not None
    person = await speak(app, clock)
    await EpisodeRepo(app.db).insert(
        NewEpisode(owner_id=person.id, channel_id=1, summary="Alice is learning Italian",
                   source="user", started_at=clock.now(), ended_at=clock.now(), row_ids=(1,)),
        hashed_embedding("Alice is learning Italian", app.db.dim), clock.now())
    clock.advance(hours=1)
    dmn = app.runner.registry.get("dmn")
    first = await app.runner.run_job(dmn, person)
    assert first.status == "ok"
    await app.processor.drain()
    calls = len(fake_openai.chat_requests())
    clock.advance(hours=1)
    again = await app.runner.run_job(dmn, person)
    episodes = [(e.id, e.source, e.summary[:30]) for e in await app.services.episodes.for_owner(
        person.id)]
    assert again.status == "skipped" and again.detail == "nothing new", (again, episodes)
    assert len(fake_openai.chat_requests()) == calls
    assert dmn_calls(fake_openai) == 1
    assert len(await app.services.runs.runs(person_id=person.id, job="dmn")) == 1
    # A new episode is new input: the DMN reflects again.
    await EpisodeRepo(app.db).insert(
        NewEpisode(owner_id=person.id, channel_id=1, summary="Alice booked a trip to Rome",
                   source="user", started_at=clock.now(), ended_at=clock.now(), row_ids=(1,)),
        hashed_embedding("Alice booked a trip to Rome", app.db.dim), clock.now())
    assert (await app.runner.run_job(dmn, person)).status == "ok"
    assert dmn_calls(fake_openai) == 2


async def test_dmn_is_a_background_turn_that_never_marks_activity_or_reaches_chat(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    assert app.runner is not None
    sent: list[tuple[str, str]] = []

    async def console_send(room: str, text: str) -> list[str]:
        sent.append((room, text))
        return []

    app.outbound.register("console", console_send)
    person = await speak(app, clock)
    active = person.last_active_at
    await EpisodeRepo(app.db).insert(
        NewEpisode(owner_id=person.id, channel_id=1, summary="Alice worries about her exam",
                   source="user", started_at=clock.now(), ended_at=clock.now(), row_ids=(1,)),
        hashed_embedding("exam", app.db.dim), clock.now())
    fake_openai.reply("Finding: Alice's exam is on her mind; ask how it went.")
    clock.advance(hours=1)
    report = await app.runner.run_job(app.runner.registry.get("dmn"), person)
    assert report.status == "ok" and report.tokens > 0
    channels = {c.source: c for c in await app.channels.for_owner(person.id)}
    assert channels["dmn"].kind.value == "background"
    rows = await app.transcript.for_channel(channels["dmn"].id)
    assert [r.source for r in rows] == ["dmn", "dmn"]
    assert "exam is on her mind" in rows[-1].content
    prompt = fake_openai.chat_requests()[-1]["messages"]
    assert "Alice worries about her exam" in str(prompt)
    after = await app.persons.get(person.id)
    assert after is not None and after.last_active_at == active
    assert sent == []


async def test_background_turn_with_a_turn_id_is_done_once(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    person = await speak(app, clock)
    fake_openai.reply("first answer", "second answer")
    one = await app.processor.handle_background(person, "dmn", "reflect", turn_id="fixed")
    two = await app.processor.handle_background(person, "dmn", "reflect", turn_id="fixed")
    assert one.reply == two.reply == "first answer"
    assert not one.resumed and two.resumed and two.tokens == 0
    assert len(await app.transcript.by_turn("fixed")) == 2


async def test_interrupted_run_is_redone_not_lost(
        make_app: AppFactory, clock: ManualClock) -> None:
    app = await make_app()
    job = CountingJob("slow")
    person = await speak(app, clock)
    clock.advance(hours=1)
    # A previous process opened a run and died: no cursor moved, the run is left `running`.
    await app.services.runs.start("slow", person.id, clock.now())
    runner = Runner(app.services, JobRegistry([job]))  # type: ignore[arg-type]
    await runner.start_up()
    old = await app.services.runs.runs(person_id=person.id, job="slow")
    assert [r.status for r in old] == ["interrupted"]
    await runner.check_jobs()
    assert job.ran == ["v1"]
    await runner.check_jobs()
    assert job.ran == ["v1"]  # and only once


async def test_cancellation_propagates_and_is_recorded(
        make_app: AppFactory, clock: ManualClock) -> None:
    import asyncio

    app = await make_app()
    started = asyncio.Event()

    async def hang(ctx: JobContext) -> None:
        started.set()
        await asyncio.Event().wait()

    runner = Runner(app.services, JobRegistry([CountingJob("hang", on_run=hang)]))  # type: ignore[arg-type]
    person = await speak(app, clock)
    clock.advance(hours=1)
    task = asyncio.create_task(runner.check_jobs())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    runs = await app.services.runs.runs(person_id=person.id, job="hang")
    assert [r.status for r in runs] == ["cancelled"]
    assert await app.services.runs.cursor("hang", person.id) is None


async def test_tick_checks_jobs_every_interval_only(
        make_app: AppFactory, clock: ManualClock) -> None:
    app = await make_app(job_interval_minutes=5)
    job = CountingJob("j")
    runner = Runner(app.services, JobRegistry([job]))  # type: ignore[arg-type]
    await speak(app, clock)
    clock.advance(hours=1)
    assert [r.job for r in await runner.tick()] == ["j"]
    job.inputs_value = "v2"
    clock.advance(minutes=4)
    assert await runner.tick() == []
    clock.advance(minutes=1)
    await runner.tick()
    assert job.ran == ["v1", "v2"]


async def test_the_loop_delivers_reminders_while_a_long_job_runs_and_stops_cleanly(
        make_app: AppFactory, clock: ManualClock) -> None:
    import asyncio

    app = await make_app()
    started, release, delivered = asyncio.Event(), asyncio.Event(), asyncio.Event()
    inbox: list[str] = []

    async def send(room: str, text: str) -> list[str]:
        inbox.append(text)
        delivered.set()
        return []

    async def slow(ctx: JobContext) -> None:
        started.set()
        await release.wait()

    async def one_minute(seconds: float) -> None:  # the loop's sleep: a minute passes
        clock.advance(minutes=1)
        await asyncio.sleep(0.001)

    app.outbound.register("console", send)
    person = await speak(app, clock)
    await app.services.reminders.add(
        owner_id=person.id, channel_id=1, kind="reminder", text="tea", timezone="UTC",
        due_at=clock.now() + timedelta(minutes=45), now=clock.now())
    job = CountingJob("slow", on_run=slow)
    runner = Runner(app.services, JobRegistry([job]), sleep=one_minute)  # type: ignore[arg-type]
    runner.start()
    try:
        await asyncio.wait_for(started.wait(), 5)  # the job began after 30 idle minutes …
        await asyncio.wait_for(delivered.wait(), 5)  # … and the reminder still came at 45
        assert inbox == ["⏰ Reminder: tea"] and job.ran == [] and runner.is_running()
    finally:
        await runner.stop()
    assert not runner.is_running()
    runs = await app.services.runs.runs(person_id=person.id, job="slow")
    assert [r.status for r in runs] == ["cancelled"]


async def test_disabled_jobs_are_skipped_and_a_typo_is_a_clear_error(
        make_app: AppFactory, clock: ManualClock) -> None:
    from strata.core.errors import ConfigError

    app = await make_app(disabled_jobs=("research",))
    assert app.runner is not None
    await speak(app, clock)
    clock.advance(hours=1)
    assert "research" not in {r.job for r in await app.runner.check_jobs()}
    before = set(threading.enumerate())
    with pytest.raises(ConfigError, match="no job called 'reserach'"):
        await make_app(disabled_jobs=("reserach",))
    # The refused app closed the database it had opened: an open connection's thread would
    # hold the process at its exit (a `strata run` with that typo hung instead of ending).
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=10)
        assert not thread.is_alive(), thread.name


class ParsingJob(BaseJob):
    """A job whose model answer must be the word "good"; anything else fails the run."""

    name = "parse"
    description = "test job that parses a background turn's reply"

    def __init__(self) -> None:
        self.replies: list[str] = []

    async def inputs(self, ctx: JobContext) -> str | None:
        return "v1"

    async def run(self, ctx: JobContext) -> JobOutcome:
        reply = await ctx.turn("dmn", "answer with one word", instructions="say good")
        self.replies.append(reply)
        if reply != "good":
            raise ValueError(f"unparsable answer {reply!r}")
        return JobOutcome("parsed")


async def test_a_failed_job_turn_is_retried_with_backoff_and_can_succeed(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    """A bad model answer is not replayed: the next attempt makes a new turn, after an
    exponentially growing wait (5, 10, 20 ... minutes, capped), recorded for `jobs status`."""
    app = await make_app(job_retry_minutes=5.0, job_retry_max_minutes=15.0)
    job = ParsingJob()
    runner = Runner(app.services, JobRegistry([job]))  # type: ignore[arg-type]
    person = await speak(app, clock)
    clock.advance(hours=1)
    fake_openai.reply("garbage", "junk", "rubbish", "good")
    first = await runner.run_job(job, person)
    assert first.status == "error" and job.replies == ["garbage"]
    cursor = await app.services.runs.cursor("parse", person.id)
    assert cursor is not None and cursor.failures == 1
    assert cursor.retry_at == clock.now() + timedelta(minutes=5)

    clock.advance(minutes=4)
    waiting = await runner.run_job(job, person)
    assert waiting.status == "skipped" and "retry" in waiting.detail
    assert job.replies == ["garbage"]  # no model call while backing off

    waits = []
    for _ in range(2):  # two more failures: the waits double, then hit the cap
        clock.set(cursor.retry_at)
        assert (await runner.run_job(job, person)).status == "error"
        cursor = await app.services.runs.cursor("parse", person.id)
        assert cursor is not None and cursor.retry_at is not None
        waits.append(cursor.retry_at - clock.now())
    assert waits == [timedelta(minutes=10), timedelta(minutes=15)]
    assert job.replies == ["garbage", "junk", "rubbish"]  # a new turn, a new answer each time

    clock.set(cursor.retry_at)
    ok = await runner.run_job(job, person)
    assert ok.status == "ok" and job.replies[-1] == "good"
    cursor = await app.services.runs.cursor("parse", person.id)
    assert cursor is not None and cursor.failures == 0 and cursor.retry_at is None
