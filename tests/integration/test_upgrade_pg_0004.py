"""Upgrade to stored keyword columns (PostgreSQL migration 0004, nothing on SQLite): episodes
and facts written by the schema before are found by keyword search afterwards, ranked from the
column the migration computed for them, with their rows as they were."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from strata.core.types import ChannelKind, NewRow, Role
from strata.memory.engines.db import Database
from strata.memory.engines.migrations import available
from strata.memory.rules.fact_types import NewFact
from strata.memory.store.episodes import EpisodeRepo, NewEpisode
from strata.memory.store.facts import FactRepo
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.transcript import TranscriptRepo
from tests.conftest import TEST_DIM

pytestmark = pytest.mark.postgres_only
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


async def test_old_episodes_and_facts_are_found_after_the_upgrade(
        empty_target: tuple[str, str]) -> None:
    _, target = empty_target
    old = await Database.open(target, TEST_DIM, upto=3)
    try:
        ada = await PersonRepo(old).get_or_create("telegram:42", "Ada", T0)
        chat = await ChannelRepo(old).get_or_create(
            platform="telegram", room_ref="42", owner_id=ada.id, kind=ChannelKind.PRIVATE,
            source="user", now=T0, name="Ada")
        [row] = await TranscriptRepo(old).append([NewRow(
            channel_id=chat.id, person_id=ada.id, ts=T0, source="user", role=Role.USER,
            content="the glacier hike was long", turn_id="t1")])
        episode = await EpisodeRepo(old).insert(
            NewEpisode(ada.id, chat.id, "A long hike up to the glacier", "user", T0, T0, (row,),
                       key_terms="glacier hike"), np.ones(TEST_DIM, np.float32), T0)
        fact = await FactRepo(old).add(
            NewFact(ada.id, "user_specific", "Ada collects lichens", "user",
                    attribute="hobby_lichenology"), None, T0)
    finally:
        await old.close()
    new = await Database.open(target, TEST_DIM)
    try:
        assert [n for n, _ in await new.applied_migrations()] == [
            n for n, _, _ in available("strata.memory.engines.pg.migrations")]
        dialect = new.dialect
        episodes = await new.fetchall(dialect.episode_search,
                                      (dialect.keyword_query("glaciers"), 100, ada.id, 10))
        facts = await new.fetchall(dialect.fact_search,
                                   (dialect.keyword_query("lichenology"), ada.id, 10))
        assert [int(r[0]) for r in episodes] == [episode]
        assert [int(r[0]) for r in facts] == [fact]
        kept = await EpisodeRepo(new).get(episode)
        assert kept is not None and kept.summary == "A long hike up to the glacier"
    finally:
        await new.close()
