"""Upgrade to the turn claims (SQLite migration 0013, PostgreSQL 0003): a database made by the
schema before, with a person, a Telegram chat and its stored messages, keeps its rows, and
after the upgrade a turn of that chat can be queued and its channel leased."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from strata.core.types import ChannelKind, InboundMessage, NewRow, Role
from strata.memory.coordination.leases import Leases
from strata.memory.coordination.turn_queue import NewTurn, TurnQueue
from strata.memory.engines.db import Database
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.transcript import TranscriptRepo
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OURS = {"sqlite": 13, "postgres": 3}  # the migration under test, per engine


async def test_upgrade_keeps_the_chats_and_queues_their_turns(
        empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await PersonRepo(old).get_or_create("telegram:42", "Ada", T0)
        chat = await ChannelRepo(old).get_or_create(
            platform="telegram", room_ref="42", owner_id=ada.id, kind=ChannelKind.PRIVATE,
            source="user", now=T0, name="Ada")
        await TranscriptRepo(old).append([NewRow(
            channel_id=chat.id, person_id=ada.id, ts=T0, source="user", role=Role.USER,
            content="hello", turn_id="t1", platform_msg_id="7")])
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        [row] = await TranscriptRepo(db).by_platform_msg(chat.id, "7")
        assert (row.content, row.turn_id) == ("hello", "t1")
        queue = TurnQueue(db)
        msg = InboundMessage(platform="telegram", room_id="42", sender_id="42", text="hello",
                             ts=T0, message_id="7")
        assert await queue.put(NewTurn(platform="telegram", channel_id=chat.id,
                                       person_id=ada.id, turn_id="t1", stored=True, msg=msg,
                                       reply_to=None, created_at=T0))
        assert [q.turn_id for q in await queue.for_channel(chat.id)] == ["t1"]
        assert await Leases(db).take(f"turn:{chat.id}", "host:1:a", T0, timedelta(seconds=30))
    finally:
        await db.close()
