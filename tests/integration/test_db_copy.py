"""`strata db copy`: a store populated through the real app (turns, a reminder set by the model's
tool call, episodes with a roll-up parent, facts with a superseded one, vectors, job runs) is
copied SQLite → PostgreSQL → SQLite; every table has the same rows on all three, the id
counters carry over (a deleted fact's id is not handed out again), and recall injects the
same block for the same queries on all three. Plus the refusals: a non-empty destination, a
dimension mismatch, an unreachable server, the same database twice.

The first leg runs the real command in a subprocess; the way back calls `copy_store`.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings, load_settings
from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.engines.db import Database
from strata.memory.engines.transfer import copy_store
from strata.memory.rules.fact_types import NewFact
from strata.memory.store.episodes import LEAF, EpisodeRepo, NewEpisode
from tests.conftest import TEST_DIM, strata_env
from tests.fakes.openai_server import FakeOpenAI, Reply

from .test_turns import msg

QUERIES = ["what is my cat called", "where do I walk on Sundays", "stamps",
           "when is the dentist", "grey mouse hunting"]
SKIP = {"meta", "migrations", "recall_tables"}  # transfer.SKIPPED: not copied


def quiet(settings: Settings) -> Settings:
    """Extractive episodes: no after-turn model call takes a reply scripted for a turn."""
    return settings.model_copy(
        update={"episodes": settings.episodes.model_copy(update={"use_model": False})})


def settings_for(fake: FakeOpenAI, target: Path | str) -> Settings:
    return quiet(load_settings(None, env=strata_env(fake, target)))


async def say(app: App, clock: ManualClock, user: str, text: str) -> None:
    clock.advance(seconds=30)
    assert await app.processor.handle(msg(text, user, clock)) is not None


async def populate(app: App, clock: ManualClock, fake: FakeOpenAI) -> int:
    """A store with something in every kind of table; returns a deleted fact's id."""
    await say(app, clock, "alice", "My cat is called Miso, she is grey.")
    await say(app, clock, "alice", "I walk the river trail every Sunday.")
    fake.reply(Reply(tool_calls=[("set_reminder", {"text": "dentist",
                                                    "when": "2026-01-07 10:30"})]),
               "I'll remind you.")
    await say(app, clock, "alice", "remind me on Wednesday at 10:30 about the dentist")
    await say(app, clock, "bob", "I collect old stamps from Peru.")
    await say(app, clock, "alice", "Miso caught a grey mouse today!")
    await app.processor.drain()
    clock.advance(hours=3)
    assert app.cutter is not None and app.row_indexer is not None
    await app.row_indexer.index_all()
    made = await app.cutter.cut_all(clock.now(), flush=True)
    assert made
    alice = await app.persons.find("alice")
    assert alice is not None
    episodes = EpisodeRepo(app.db)
    leaves = [e for e in await episodes.for_owner(alice.id) if e.level == LEAF]
    summary = "Alice's cat Miso and her Sunday walks"
    parent = await episodes.insert(
        NewEpisode(alice.id, leaves[0].channel_id, summary, "user", leaves[0].started_at,
                   clock.now(), (), level=1, child_count=len(leaves), method="extractive"),
        (await app.embedder.embed([summary]))[0], clock.now())
    await episodes.tombstone([e.id for e in leaves], parent, clock.now())
    facts = app.facts
    old = await facts.add(NewFact(alice.id, "user_specific", "Has a cat named Mitzi", "user",
                                  attribute="pet_name"), clock.now())
    new = await facts.add(NewFact(alice.id, "user_specific", "Has a grey cat named Miso",
                                  "user", attribute="pet_name", episode_ids=(parent,)),
                          clock.now())
    assert old.fact_id and new.fact_id
    await facts.repo.supersede(alice.id, [old.fact_id], new.fact_id, clock.now())
    await facts.add(NewFact(alice.id, "place", "Walks the river trail on Sundays", "user"),
                    clock.now())
    gone = await facts.add(NewFact(alice.id, "note", "A passing remark", "user"), clock.now())
    assert gone.fact_id
    await facts.repo.delete([gone.fact_id])  # the newest id: never to be handed out again
    runs = JobRunRepo(app.db)
    await runs.finish(await runs.start("decay", alice.id, clock.now()), now=clock.now(),
                      status="ok", cursor="7")
    return gone.fact_id


async def table_rows(db: Database) -> dict[str, int]:
    names = [str(r[0]) for r in await db.fetchall(db.dialect.data_tables)]
    return {n: int(await db.fetchval(f'SELECT count(*) FROM "{n}"'))
            for n in names if n not in SKIP}


async def blocks(settings: Settings, clock: ManualClock) -> list[str]:
    app = await App.create(settings, clock=clock)
    try:
        assert app.recall is not None
        alice = await app.persons.find("alice")
        assert alice is not None
        out = []
        for query in QUERIES:
            result = await app.recall.search(alice.id, query, clock.now(), 1000)
            out.append(result.render())
        return out
    finally:
        await app.close()


def strata(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strata.app.cli", *args], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
async def source(fake_openai: FakeOpenAI, db_path: Path, clock: ManualClock
                 ) -> AsyncIterator[int]:
    """The populated SQLite store at `db_path` (closed); yields the deleted fact's id."""
    app = await App.create(settings_for(fake_openai, db_path), clock=clock)
    try:
        gone = await populate(app, clock, fake_openai)
    finally:
        await app.close()
    yield gone


@pytest.mark.postgres_only  # SQLite to PostgreSQL and back: once, in the PostgreSQL pass
async def test_copy_round_trips_counts_ids_and_recall(
        source: int, fake_openai: FakeOpenAI, db_path: Path, pg_url: str, tmp_path: Path,
        clock: ManualClock, subprocess_env: dict[str, str]) -> None:
    back_path = tmp_path / "back.db"
    src = await Database.open(db_path, TEST_DIM)
    before = await table_rows(src)
    await src.close()
    # Something in every table the app filled, including the vectors and the self-references.
    for table in ("persons", "identities", "channels", "transcript", "transcript_vec",
                  "episodes", "episode_rows", "episode_vec", "facts", "fact_sources",
                  "fact_vec", "reminders", "job_runs", "job_cursors", "episode_cursors",
                  "transcript_vec_cursors"):
        assert before[table] > 0, table
    expected = await blocks(settings_for(fake_openai, db_path), clock)
    assert any("Miso" in b for b in expected)

    done = strata(subprocess_env, "db", "copy", str(db_path), pg_url)
    assert done.returncode == 0, done.stderr
    assert "every count matches" in done.stdout
    assert "transcript_vec" in done.stderr  # progress, table by table
    pg = await Database.open(pg_url, TEST_DIM)
    try:
        assert await table_rows(pg) == before
        parents = await pg.fetchval("SELECT count(*) FROM episodes WHERE parent_id IS NOT NULL")
        successors = await pg.fetchval(
            "SELECT count(*) FROM facts WHERE superseded_by IS NOT NULL")
        assert parents > 0 and successors == 1
        report = await copy_store(pg, await Database.open(back_path, TEST_DIM))
    finally:
        await pg.close()
    assert report.ok and {c.table: c.source for c in report.counts} == before

    back = await Database.open(back_path, TEST_DIM)
    try:
        assert await table_rows(back) == before
        src = await Database.open(db_path, TEST_DIM)
        try:
            for table in ("transcript", "episodes", "facts", "reminders", "transcript_vec"):
                key = "row_id" if table == "transcript_vec" else "id"
                ours = [tuple(r) for r in await src.fetchall(
                    f"SELECT * FROM {table} ORDER BY {key}")]
                theirs = [tuple(r) for r in await back.fetchall(
                    f"SELECT * FROM {table} ORDER BY {key}")]
                assert theirs == ours, table
        finally:
            await src.close()
    finally:
        await back.close()

    assert await blocks(settings_for(fake_openai, pg_url), clock) == expected
    assert await blocks(settings_for(fake_openai, back_path), clock) == expected
    # The id counters came along: the deleted fact's id is not handed out again.
    for target in (pg_url, back_path):
        app = await App.create(settings_for(fake_openai, target), clock=clock)
        try:
            alice = await app.persons.find("alice")
            assert alice is not None
            added = await app.facts.add(NewFact(alice.id, "note", "Likes tea", "user"),
                                        clock.now())
            assert added.fact_id is not None and added.fact_id > source
        finally:
            await app.close()


async def test_copy_refuses_a_non_empty_destination_unless_replacing(
        source: int, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    copy = tmp_path / "copy.db"
    assert strata(subprocess_env, "db", "copy", str(db_path), str(copy)).returncode == 0
    src = await Database.open(db_path, TEST_DIM)
    before = await table_rows(src)
    await src.close()
    again = strata(subprocess_env, "db", "copy", str(db_path), str(copy))
    assert again.returncode == 2
    assert "destination is not empty" in again.stderr and "--replace" in again.stderr
    replaced = strata(subprocess_env, "db", "copy", "--replace", str(db_path), str(copy))
    assert replaced.returncode == 0, replaced.stderr
    dst = await Database.open(copy, TEST_DIM)
    try:
        assert await table_rows(dst) == before
    finally:
        await dst.close()


async def test_copy_errors_are_clear(source: int, db_path: Path, tmp_path: Path,
                                     subprocess_env: dict[str, str]) -> None:
    other = tmp_path / "other.db"
    await (await Database.open(other, TEST_DIM * 2)).close()  # made at another dimension
    cases: list[tuple[list[str], str]] = [
        ([str(db_path), str(other)], "embedding dimension 128"),
        ([str(db_path), "postgresql://strata@127.0.0.1:1/nowhere"],
         "cannot open database postgresql://strata@127.0.0.1:1/nowhere"),
        ([str(db_path), str(db_path)], "the same database"),
        ([str(tmp_path / "missing.db"), str(other)], "no database file at"),
    ]
    for args, message in cases:
        done = strata(subprocess_env, "db", "copy", *args)
        assert done.returncode == 2, (args, done.stdout)
        assert message in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "missing.db").exists()


async def test_copy_refuses_stores_of_different_schemas(
        source: int, db_path: Path, tmp_path: Path) -> None:
    older = tmp_path / "older.db"
    await (await Database.open(older, TEST_DIM, upto=5)).close()
    src = await Database.open(db_path, TEST_DIM)
    dst = await Database.open(older, TEST_DIM, migrate=False)
    try:
        with pytest.raises(Exception, match="schemas differ") as raised:
            await copy_store(src, dst)
        assert "nothing was copied" in str(raised.value)
        assert int(await dst.fetchval("SELECT count(*) FROM persons")) == 0
    finally:
        await src.close()
        await dst.close()
