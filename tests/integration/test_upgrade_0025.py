"""Upgrade to the grounding refusal counts (SQLite migration 0025, PostgreSQL 0015): a person
from before is kept, their refusals are then counted per layer and reason, and deleting the
person (as /wipe does) takes the counts along. What the jobs wrote unchecked before is
withdrawn (the portrait, job-written habits and places, reflections, the DMN's episodes) and
those jobs start over; facts from extraction and the person's episodes stay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from strata.core.clock import to_iso
from strata.core.types import ChannelKind
from strata.memory.checks import grounding as g
from strata.memory.engines.db import Database
from strata.memory.store.episodes import EpisodeRepo, NewEpisode
from strata.memory.store.facts import FactRepo
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.portraits import PortraitRepo
from strata.memory.store.refusals import RefusalRepo
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OURS = {"sqlite": 25, "postgres": 15}  # the migration under test, per engine


async def test_upgrade_adds_refusal_counts_per_person(empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await PersonRepo(old).get_or_create("console:ada", "Ada", T0)
        ch = await ChannelRepo(old).get_or_create(platform="console", room_ref="ada/default",
                                                  owner_id=ada.id, kind=ChannelKind.PRIVATE,
                                                  source="user", now=T0)
        await PortraitRepo(old).save(ada.id, "Enjoys hiking, cooking and video games.", "x", T0)
        for kind, text, source, channel in [
                ("behavioral_pattern", "short statement about the person", "user", None),
                ("place", "usually at the gym (near 1.000, 2.000)", "user", None),
                ("reflection", "Ada seems to love hiking.", "dmn", None),
                ("user_specific", "Lives in Porto", "user", ch.id)]:
            await old.execute_write(
                "INSERT INTO facts (owner_id, kind, text, source, channel_id, valid_from,"
                " created_at, last_relevant_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (ada.id, kind, text, source, channel, to_iso(T0), to_iso(T0), to_iso(T0)))
        vec = np.eye(1, TEST_DIM, dtype=np.float32)[0]
        for source in ("dmn", "user"):
            await EpisodeRepo(old).insert(NewEpisode(ada.id, ch.id, f"said in {source}", source,
                                                     T0, T0, ()), vec, T0)
        for job in ("patterns", "synthesis", "decay"):
            await old.execute_write(
                "INSERT INTO job_cursors (job, person_id, cursor) VALUES (?, ?, 'row:9')",
                (job, ada.id))
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        assert OURS[engine] in {n for n, _ in await db.applied_migrations()}
        assert await PortraitRepo(db).latest(ada.id) is None
        assert [f.text for f in await FactRepo(db).for_owner(ada.id)] == ["Lives in Porto"]
        assert await db.fetchval("SELECT count(*) FROM facts WHERE status = 'retracted'") == 3
        assert [r[0] for r in await db.fetchall("SELECT job FROM job_cursors")] == ["decay"]
        assert sorted((str(r[0]), r[1] is None) for r in await db.fetchall(
            "SELECT source, tombstoned_at FROM episodes")) == [("dmn", False), ("user", True)]
        repo = RefusalRepo(db)
        echo = g.Refusal(g.PATTERNS, g.ECHO, "short statement about the person")
        await repo.record(ada.id, [echo, echo, g.Refusal(g.PORTRAIT, g.NAME, "Alice")], T0)
        later = T0 + timedelta(hours=1)
        await repo.record(ada.id, [echo], later)
        counts = {(c.layer, c.reason): (c.count, c.last_at) for c in await repo.for_owner(ada.id)}
        assert counts == {(g.PATTERNS, g.ECHO): (3, later), (g.PORTRAIT, g.NAME): (1, T0)}
        await db.execute_write("DELETE FROM persons WHERE id = ?", (ada.id,))
        assert await db.fetchval("SELECT count(*) FROM grounding_refusals") == 0
    finally:
        await db.close()
