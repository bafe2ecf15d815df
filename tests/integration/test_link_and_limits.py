"""`/link` (one-time codes, merging persons so memory follows them) and the per-person limit
on model calls, through the real turn processor and database."""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from strata.app.compose import App
from strata.bot.prompt import MEMORY_PREAMBLE
from strata.core.clock import ManualClock
from strata.core.types import ChannelKind, InboundMessage
from strata.memory.store.episodes import EpisodeRepo, NewEpisode, as_blob
from strata.memory.store.linking import LinkCodes
from tests.fakes.openai_server import FakeOpenAI


def console(text: str, clock: ManualClock, user: str = "alice") -> InboundMessage:
    return InboundMessage("console", f"{user}/default", user, text, clock.now(), sender_name=user)


def matrix(text: str, clock: ManualClock, user: str = "@alice:hs",
           room: str = "!dm:hs", private: bool = True) -> InboundMessage:
    return InboundMessage("matrix", room, user, text, clock.now(), sender_name="Alice",
                          is_private=private)


async def recalled_for(app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> str:
    """The memory block the model got when Alice asked about her cat on Matrix."""
    fake_openai.clear()
    fake_openai.responder = lambda body: "ok"
    await app.processor.handle(matrix("what is my cat called?", clock))
    turn_request = next(r for r in fake_openai.chat_requests()
                        if "what is my cat called" in str(r["messages"][-1]["content"]))
    return "\n".join(str(m["content"]) for m in turn_request["messages"]
                     if m["role"] == "system" and MEMORY_PREAMBLE in str(m["content"]))


def code_of(reply: str) -> str:
    return reply.split("Your link code is ", 1)[1].split(".", 1)[0]


async def test_link_merges_identities_channels_and_memory(
    app: App, fake_openai: FakeOpenAI, clock: ManualClock
) -> None:
    fake_openai.responder = lambda body: "ok"
    await app.processor.handle(console("my cat is called Miso", clock))
    await app.processor.handle(matrix("I live in Leipzig", clock))
    home = await app.persons.by_identity("console:alice")
    away = await app.persons.by_identity("matrix:@alice:hs")
    assert home is not None and away is not None and home.id != away.id
    await app.processor.drain()
    assert "my cat is called Miso" not in await recalled_for(app, fake_openai, clock)
    episodes = EpisodeRepo(app.db)
    away_channel = await app.channels.by_ref("matrix", "!dm:hs")
    assert away_channel is not None
    row_ids = [r.id for r in await app.transcript.for_channel(away_channel.id)]
    vec = np.ones(app.db.dim, dtype=np.float32) / np.sqrt(app.db.dim)
    episode_id = await episodes.insert(
        NewEpisode(away.id, away_channel.id, "Alice lives in Leipzig", "user", clock.now(),
                   clock.now(), tuple(row_ids)), vec, clock.now())

    issued = await app.processor.handle(console("/link", clock))
    assert issued is not None and issued.command == "link"
    code = code_of(issued.reply)
    done = await app.processor.handle(matrix(f"/link {code.lower()}", clock))
    assert done is not None and done.reply.startswith("Linked")
    assert "console:alice" in done.reply and "matrix:@alice:hs" in done.reply

    assert await app.persons.get(away.id) is None
    merged = await app.persons.by_identity("matrix:@alice:hs")
    assert merged is not None and merged.id == home.id
    assert await app.persons.identities(home.id) == ["console:alice", "matrix:@alice:hs"]
    channels = await app.channels.for_owner(home.id)
    assert {c.platform for c in channels} == {"console", "matrix"}
    contents = [r.content for r in await app.transcript.for_owner(home.id)]
    assert "my cat is called Miso" in contents and "I live in Leipzig" in contents
    assert await app.transcript.count(away.id) == 0
    moved = await episodes.get(episode_id)
    assert moved is not None and moved.owner_id == home.id
    hits = await app.db.fetchall(app.db.dialect.knn_sql("episode_vec", "episode_id"),
                                 (as_blob(vec), home.id, 5))
    assert [h[0] for h in hits] == [episode_id]
    # Keyword search over the merged person's memory finds what was said on either platform.
    assert [r.content for r, _ in await app.transcript.search(home.id, "Leipzig")] == [
        "I live in Leipzig"]
    # Recall crosses the merged person's channels: asked on Matrix, the console fact comes up.
    await app.processor.drain()
    assert "my cat is called Miso" in await recalled_for(app, fake_openai, clock)
    # The code was single-use.
    again = await app.processor.handle(matrix(f"/link {code}", clock, user="@eve:hs",
                                              room="!eve:hs"))
    assert again is not None and "unknown or has expired" in again.reply


async def test_link_codes_expire_and_stay_out_of_shared_rooms(
    app: App, fake_openai: FakeOpenAI, clock: ManualClock
) -> None:
    issued = await app.processor.handle(console("/link", clock))
    assert issued is not None
    code = code_of(issued.reply)
    clock.advance(minutes=11)
    late = await app.processor.handle(matrix(f"/link {code}", clock))
    assert late is not None and "expired" in late.reply
    assert await app.persons.by_identity("matrix:@alice:hs") is not None
    shared = await app.processor.handle(matrix("/link", clock, room="!group:hs", private=False))
    assert shared is not None and "private chat" in shared.reply
    same = await app.processor.handle(console("/link", clock))
    assert same is not None
    self_link = await app.processor.handle(console(f"/link {code_of(same.reply)}", clock))
    assert self_link is not None and "already linked" in self_link.reply
    assert await LinkCodes(app.db).redeem("nonsense", clock.now()) is None


async def test_model_calls_are_limited_per_person(
    app: App, fake_openai: FakeOpenAI, clock: ManualClock
) -> None:
    fake_openai.responder = lambda body: "answer"
    limit = app.settings.access.model_calls_per_minute
    for i in range(limit):
        result = await app.processor.handle(console(f"message {i}", clock))
        assert result is not None and result.reply == "answer"
        clock.advance(seconds=1)
    calls = len(fake_openai.chat_requests())
    over = await app.processor.handle(console("one too many", clock))
    assert over is not None and over.failed
    assert "again in about" in over.reply and "saved" in over.reply
    assert len(fake_openai.chat_requests()) == calls  # the model was not called
    person = await app.persons.find("alice")
    assert person is not None
    assert (await app.transcript.for_owner(person.id))[-1].content == "one too many"
    # Another person is not affected.
    bob = await app.processor.handle(console("hi", clock, user="bob"))
    assert bob is not None and bob.reply == "answer"
    # A minute after the first call, alice can talk again.
    clock.advance(timedelta(seconds=41))
    later = await app.processor.handle(console("and now?", clock))
    assert later is not None and later.reply == "answer"


async def test_a_dm_that_becomes_a_group_gets_its_own_channel(
    app: App, fake_openai: FakeOpenAI, clock: ManualClock
) -> None:
    fake_openai.responder = lambda body: "ok"
    await app.processor.handle(matrix("my PIN is 4242", clock, room="!r:hs"))
    fake_openai.clear()
    fake_openai.responder = lambda body: "ok"
    await app.processor.handle(matrix("Strata, hi all", clock, room="!r:hs", private=False))
    assert "4242" not in str(fake_openai.chat_requests())
    private = await app.channels.by_ref("matrix", "!r:hs")
    assert private is not None and private.kind is ChannelKind.PRIVATE
    # The same room id, now shared, has a separate channel owned by the room's scope.
    scope = await app.persons.by_identity("room:matrix:!r:hs")
    assert scope is not None and scope.id != private.owner_id
    shared = await app.channels.by_ref("matrix", f"!r:hs#shared:{scope.id}")
    assert shared is not None and shared.kind is ChannelKind.SHARED
    assert shared.owner_id == scope.id
    rows = await app.transcript.for_channel(shared.id)
    assert rows[0].content == "Strata, hi all"
