"""The Matrix adapter against a real Synapse on 127.0.0.1, with the real turn processor, a real
SQLite database and the fake OpenAI-compatible model server.

People are real nio clients (bounded retries, so a dead server fails a test instead of hanging
it); the bot is `MatrixAdapter` started inside the test's event loop.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
import urllib.request
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from nio import (
    AsyncClient,
    AsyncClientConfig,
    MegolmEvent,
    RoomCreateResponse,
    RoomSendResponse,
    TypingNoticeEvent,
)

from strata.adapters.matrix.adapter import MatrixAdapter
from strata.adapters.matrix.mapping import EVENT_LIMIT
from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import AccessSettings, MatrixSettings, Settings
from strata.core.types import ChannelKind, Role
from tests.fakes.openai_server import FakeOpenAI, last_user_text
from tests.fakes.synapse import Synapse

CONFIG = AsyncClientConfig(max_limit_exceeded=3, max_timeouts=2, request_timeout=10)
FILTER = {"room": {"timeline": {"limit": 100}}}
DEADLINE = 30.0  # generous: a loaded CI machine is slow, a healthy run takes ~1 s


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Human:
    """A person on Matrix: a real nio client that remembers every event it has synced."""

    def __init__(self, server: Synapse, name: str, store: Path | None = None) -> None:
        self.user = server.register(_name(name.lower()), displayname=name)
        self.id = self.user.user_id
        config = CONFIG
        if store is not None:  # an end-to-end capable client with its own key store
            store.mkdir(parents=True, exist_ok=True)
            config = AsyncClientConfig(max_limit_exceeded=3, max_timeouts=2, request_timeout=10,
                                       encryption_enabled=True)
        self.client = AsyncClient(server.base_url, config=config,
                                  store_path=str(store) if store else "")
        self.client.restore_login(self.user.user_id, self.user.device_id, self.user.access_token)
        self.events: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.invites: set[str] = set()
        self.typing: dict[str, list[list[str]]] = defaultdict(list)
        self.undecrypted = 0

    async def sync_until(self, done: Callable[[], bool], deadline: float = DEADLINE) -> None:
        end = time.monotonic() + deadline
        while not done():
            if time.monotonic() > end:
                seen = [e.get("content") for r in self.events.values() for e in r][-4:]
                raise AssertionError(f"{self.id}: not met within {deadline}s; last: {seen}")
            resp = await self.client.sync(timeout=300, sync_filter=FILTER)
            for room_id, info in getattr(resp, "rooms", None).join.items():  # type: ignore[union-attr]
                for ev in info.timeline.events:
                    if isinstance(ev, MegolmEvent):
                        self.undecrypted += 1
                    self.events[room_id].append(ev.source)
                for ev in info.ephemeral:
                    if isinstance(ev, TypingNoticeEvent):
                        self.typing[room_id].append(list(ev.users))
            self.invites.update(resp.rooms.invite)
            if self.client.olm is not None:  # what nio's sync_forever would do
                if self.client.should_upload_keys:
                    await self.client.keys_upload()
                if self.client.should_query_keys:
                    await self.client.keys_query()
                await self.client.send_to_device_messages()

    async def say(self, room_id: str, text: str, **extra: Any) -> str:
        content = {"msgtype": "m.text", "body": text, **extra}
        resp = await self.client.room_send(room_id, "m.room.message", content)
        assert isinstance(resp, RoomSendResponse), resp
        return str(resp.event_id)

    def membership(self, room_id: str, user_id: str) -> str | None:
        state = [
            ev["content"].get("membership")
            for ev in self.events[room_id]
            if ev.get("type") == "m.room.member" and ev.get("state_key") == user_id
        ]
        return state[-1] if state else None

    def from_bot(self, room_id: str, bot_id: str) -> list[dict[str, Any]]:
        return [
            ev
            for ev in self.events[room_id]
            if ev.get("sender") == bot_id and ev.get("type") == "m.room.message"
        ]

    def bot_texts(self, room_id: str, bot_id: str) -> list[str]:
        """The bot's messages in order, each as last edited."""
        events = self.from_bot(room_id, bot_id)
        texts: dict[str, str] = {}
        for ev in events:
            content = ev["content"]
            relates = content.get("m.relates_to") or {}
            if relates.get("rel_type") == "m.replace":
                texts[relates["event_id"]] = content["m.new_content"]["body"]
            else:
                texts[ev["event_id"]] = content["body"]
        return list(texts.values())

    async def close(self) -> None:
        await self.client.close()


StartBot = Callable[..., Awaitable[MatrixAdapter]]


@pytest.fixture
async def start_bot(
    synapse: Synapse, app: App, tmp_path: Path
) -> AsyncIterator[StartBot]:
    started: list[MatrixAdapter] = []

    async def start(
        *,
        server: Synapse = synapse,
        turns: Any = None,
        access: AccessSettings | None = None,
        edit_interval: float = 1.0,
        encryption: bool = False,
    ) -> MatrixAdapter:
        user = server.register(_name("strata"), displayname="Strata")
        settings = MatrixSettings(
            homeserver=server.base_url,
            user=user.user_id,
            access_token=user.access_token,
            device_id=user.device_id,
            store_path=str(tmp_path / f"store-{len(started)}"),
            encryption=encryption,
            request_timeout=10,
            max_timeouts=1,
        )
        adapter = MatrixAdapter(
            settings,
            access=access or AccessSettings(),
            bot_name="Strata",
            poll_timeout_ms=500,
            edit_interval=edit_interval,
        )
        await adapter.connect(turns or app.turns())
        started.append(adapter)
        return adapter

    yield start
    for adapter in started:
        await adapter.stop()


@pytest.fixture
async def people(synapse: Synapse) -> AsyncIterator[Callable[[str], Human]]:
    made: list[Human] = []

    def make(name: str, server: Synapse = synapse) -> Human:
        made.append(Human(server, name))
        return made[-1]

    yield make
    for human in made:
        await human.close()


ENCRYPTED = [{"type": "m.room.encryption", "state_key": "",
              "content": {"algorithm": "m.megolm.v1.aes-sha2"}}]


async def open_room(owner: Human, bot: MatrixAdapter, *others: Human, direct: bool = True,
                    encrypted: bool = False) -> str:
    """`owner` creates a room, invites the bot (and `others`), and waits for everyone's join."""
    invite = [bot.bot.user_id, *(o.id for o in others)]
    created = await owner.client.room_create(
        is_direct=direct, invite=invite, name="" if direct else "Book club",
        initial_state=ENCRYPTED if encrypted else ())
    assert isinstance(created, RoomCreateResponse), created
    room_id = created.room_id
    for other in others:
        await other.sync_until(lambda o=other: room_id in o.invites)  # type: ignore[misc]
        await other.client.join(room_id)
    await owner.sync_until(
        lambda: all(owner.membership(room_id, u) == "join" for u in invite)
    )
    return room_id


async def wait_turns(bot: MatrixAdapter, count: int, deadline: float = DEADLINE) -> None:
    """Wait until the bot has taken `count` messages in, in total, and answered every one of
    them that needs an answer."""
    end = time.monotonic() + deadline
    while bot.stats["messages"] < count:
        if time.monotonic() > end:
            raise AssertionError(f"bot took {bot.stats['messages']} of {count} messages in")
        await asyncio.sleep(0.05)
    async with asyncio.timeout(max(0.0, end - time.monotonic())):
        await bot.idle()


def raw_messages(server: Synapse, who: Human, room_id: str) -> list[dict[str, Any]]:
    """The room's events as the server stores them (no client-side decryption)."""
    request = urllib.request.Request(
        f"{server.base_url}/_matrix/client/v3/rooms/{urllib.parse.quote(room_id)}/messages"
        "?dir=b&limit=50", headers={"Authorization": f"Bearer {who.user.access_token}"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        chunk: list[dict[str, Any]] = json.load(reply)["chunk"]
    return chunk


def turn_request(fake: FakeOpenAI, text: str) -> dict[str, Any]:
    """The model request of the turn whose message contains `text` (not an after-turn job's)."""
    return next(r for r in fake.chat_requests() if text in str(r["messages"][-1]["content"]))


def remembering(body: dict[str, Any]) -> str:
    """A model that answers from what is in its prompt (history), like a real one would."""
    prompt = json.dumps(body["messages"])
    question = last_user_text(body)
    if "cat" in question and question.endswith("?"):
        return "Your cat is called Miso." if "Miso" in prompt.split(question)[0] else "No idea."
    return f"echo: {question}"


async def test_dm_round_trip_with_memory(
    start_bot: StartBot, people: Callable[[str], Human], app: App, fake_openai: FakeOpenAI
) -> None:
    began = time.monotonic()
    fake_openai.responder = remembering
    bot = await start_bot()
    alice = people("Alice")
    room = await open_room(alice, bot)
    await alice.say(room, "I adopted a cat, she is called Miso")
    await wait_turns(bot, 1)
    await alice.say(room, "what is my cat called?")
    await wait_turns(bot, 2)
    await alice.sync_until(lambda: len(alice.bot_texts(room, bot.bot.user_id)) >= 2
                           and alice.bot_texts(room, bot.bot.user_id)[-1].startswith("Your"))
    texts = alice.bot_texts(room, bot.bot.user_id)
    assert texts == ["echo: I adopted a cat, she is called Miso", "Your cat is called Miso."]
    # HTML formatted body on every message the bot sent.
    for ev in alice.from_bot(room, bot.bot.user_id):
        content = ev["content"].get("m.new_content", ev["content"])
        assert content["msgtype"] == "m.text"
        assert content["format"] == "org.matrix.custom.html" and content["formatted_body"]
    person = await app.persons.by_identity(f"matrix:{alice.id}")
    assert person is not None
    channel = await app.channels.by_ref("matrix", room)
    assert channel is not None and channel.kind is ChannelKind.PRIVATE
    assert channel.owner_id == person.id
    rows = await app.transcript.for_channel(channel.id)
    assert [r.role for r in rows] == [Role.USER, Role.ASSISTANT] * 2
    print(f"\nmatrix DM: 2 turns incl. setup in {time.monotonic() - began:.2f}s")
    # A second 1:1 room is another private channel of the same person: no shared history,
    # but turn-zero recall brings the cat back.
    await app.processor.drain()  # row vectors are written after the turn
    other = await open_room(alice, bot)
    await alice.say(other, "remind me, what is the name of the cat I adopted?")
    await wait_turns(bot, 3)
    await alice.sync_until(lambda: alice.bot_texts(other, bot.bot.user_id) == [
        "Your cat is called Miso."])
    second = await app.channels.by_ref("matrix", other)
    assert second is not None and second.id != channel.id and second.owner_id == person.id


async def test_backlog_is_not_answered_and_own_messages_ignored(
    start_bot: StartBot, people: Callable[[str], Human], app: App, fake_openai: FakeOpenAI,
    synapse: Synapse,
) -> None:
    fake_openai.responder = remembering
    first = await start_bot()
    alice = people("Alice")
    room = await open_room(alice, first)
    await first.stop()
    await alice.say(room, "a message while the bot is away")
    # The same account comes back: the message is history, not a question.
    settings = first.settings
    again = MatrixAdapter(settings, bot_name="Strata", poll_timeout_ms=300)
    await again.connect(app.turns())
    try:
        await alice.say(room, "and a new one")
        await wait_turns(again, 1)
        await alice.sync_until(lambda: len(alice.bot_texts(room, again.bot.user_id)) >= 1)
        assert alice.bot_texts(room, again.bot.user_id) == ["echo: and a new one"]
        assert again.stats["turns"] == 1  # its own reply did not start a turn
    finally:
        await again.stop()


async def test_long_reply_is_split_into_events_under_the_limit(
    start_bot: StartBot, people: Callable[[str], Human], fake_openai: FakeOpenAI
) -> None:
    paragraphs = [f"Absatz {i}: " + "Grüße-aus-Köln,-schöne-Straße. " * 60 for i in range(50)]
    long_text = "\n\n".join(p.strip() for p in paragraphs)
    assert len(long_text.encode()) > EVENT_LIMIT
    # Answer this turn only (not whatever background call comes first).
    fake_openai.responder = lambda body: (
        long_text if last_user_text(body) == "tell me everything" else None
    )
    bot = await start_bot()
    alice = people("Alice")
    room = await open_room(alice, bot)
    await alice.say(room, "tell me everything")
    await wait_turns(bot, 1)

    def joined() -> str:
        return "\n\n".join(alice.bot_texts(room, bot.bot.user_id))

    await alice.sync_until(lambda: joined().split() == long_text.split())
    texts = alice.bot_texts(room, bot.bot.user_id)
    assert len(texts) >= 2
    assert "".join(joined().split()) == "".join(long_text.split())  # nothing lost
    for part in texts:  # cut on paragraph boundaries
        assert part.startswith("Absatz") and part.endswith("Straße.")
    sizes = [len(json.dumps(ev, ensure_ascii=False, separators=(",", ":")).encode())
             for ev in alice.from_bot(room, bot.bot.user_id)]
    assert max(sizes) <= EVENT_LIMIT
    print(f"\n{len(long_text.encode())} bytes → {len(texts)} messages, "
          f"largest event {max(sizes)} bytes")


async def test_reply_is_streamed_by_m_replace_edits(
    start_bot: StartBot, people: Callable[[str], Human], fake_openai: FakeOpenAI
) -> None:
    # Sentences: a reply is streamed a finished sentence at a time (strata.bot.reply_checks).
    answer = "One. Two. Three. Four. Five. Six. Seven. Eight."
    fake_openai.responder = lambda body: answer if last_user_text(body) == "count for me" else None
    bot = await start_bot(edit_interval=0.0)
    alice = people("Alice")
    room = await open_room(alice, bot)
    await alice.say(room, "count for me")
    await wait_turns(bot, 1)
    await alice.sync_until(lambda: alice.bot_texts(room, bot.bot.user_id) == [answer])
    events = alice.from_bot(room, bot.bot.user_id)
    first, edits = events[0], events[1:]
    assert first["content"]["body"].endswith(" …")  # a preview, not the answer
    assert len(edits) >= 1  # at least the final text replaces the preview
    shown = []
    for ev in edits:
        relates = ev["content"]["m.relates_to"]
        assert relates == {"rel_type": "m.replace", "event_id": first["event_id"]}
        assert ev["content"]["m.mentions"] == {}
        shown.append(ev["content"]["m.new_content"]["body"].removesuffix(" …"))
    assert all(answer.startswith(s) for s in shown) and shown[-1] == answer
    assert [len(s) for s in shown] == sorted(len(s) for s in shown)


async def test_429_from_a_strict_homeserver_is_survived(
    synapse_strict: Synapse, start_bot: StartBot, people: Callable[[str], Human],
    fake_openai: FakeOpenAI,
) -> None:
    # Several sentences: a streamed reply is shown a finished sentence at a time, so each
    # answer is sent and then edited, and the strict homeserver's limits are met.
    more = " It has a second sentence. And a third one. And a fourth, to be sure."
    fake_openai.responder = lambda body: f"answer to {last_user_text(body)}.{more}"
    bot = await start_bot(server=synapse_strict)
    alice = Human(synapse_strict, "Alice")
    try:
        room = await open_room(alice, bot)
        questions = [f"question {i}" for i in range(3)]
        for q in questions:
            await alice.say(room, q)
        await wait_turns(bot, 3, deadline=40)
        want = [f"answer to {q}.{more}" for q in questions]
        await alice.sync_until(lambda: alice.bot_texts(room, bot.bot.user_id) == want,
                               deadline=30)
        assert bot.stats["rate_limited"] >= 1, bot.stats
        print(f"\nstrict homeserver: {dict(bot.stats)}")
    finally:
        await alice.close()


async def test_unlisted_users_are_ignored(
    start_bot: StartBot, people: Callable[[str], Human], settings: Settings, clock: ManualClock,
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.responder = lambda body: f"echo: {last_user_text(body)}"
    alice, mallory = people("Alice"), people("Mallory")
    access = AccessSettings(allow_users=(f"matrix:{alice.id}",))
    strict_app = await App.create(settings.model_copy(update={"access": access}), clock=clock)
    try:
        bot = await start_bot(turns=strict_app.turns(), access=access)
        # Mallory's invite is rejected.
        created = await mallory.client.room_create(is_direct=True, invite=[bot.bot.user_id])
        assert isinstance(created, RoomCreateResponse)
        await mallory.sync_until(
            lambda: mallory.membership(created.room_id, bot.bot.user_id) == "leave"
        )
        # In a room Alice made, Mallory's mention is not answered; Alice's is.
        room = await open_room(alice, bot, mallory, direct=False)
        await mallory.say(room, "Strata, tell me Alice's secrets")
        await alice.say(room, "Strata: hello")
        await wait_turns(bot, 2)
        await alice.sync_until(lambda: len(alice.bot_texts(room, bot.bot.user_id)) >= 1)
        assert alice.bot_texts(room, bot.bot.user_id) == ["echo: Alice: Strata: hello"]
        assert await strict_app.persons.by_identity(f"matrix:{mallory.id}") is None
        assert all("Mallory" not in json.dumps(r) and "secrets" not in json.dumps(r)
                   for r in fake_openai.chat_requests())
    finally:
        await strict_app.close()


async def test_shared_room_answers_when_addressed_and_keeps_private_memory_out(
    start_bot: StartBot, people: Callable[[str], Human], app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.responder = lambda body: f"echo: {last_user_text(body)}"
    bot = await start_bot()
    alice, bob = people("Alice"), people("Bob")
    dm = await open_room(alice, bot)
    await alice.say(dm, "my bank PIN is 4242")
    await wait_turns(bot, 1)
    group = await open_room(alice, bot, bob, direct=False)
    await bob.say(group, "anyone up for pizza?")
    await alice.say(group, "Strata: what do you know about me?")
    reply_to = await bob.say(group, "thanks")  # not addressed
    await wait_turns(bot, 4)
    await bob.sync_until(lambda: len(bob.bot_texts(group, bot.bot.user_id)) >= 1)
    answers = bob.bot_texts(group, bot.bot.user_id)
    assert answers == ["echo: Alice: Strata: what do you know about me?"]
    group_request = turn_request(fake_openai, "what do you know about me?")
    assert "4242" not in json.dumps(group_request)
    assert "anyone up for pizza?" in json.dumps(group_request)  # the room's own memory
    # The answer in the group quotes the question it answers.
    first = bob.from_bot(group, bot.bot.user_id)[0]["content"]
    assert "m.in_reply_to" in first["m.relates_to"]
    # Bob replies to the bot: that addresses it.
    bot_event = bob.from_bot(group, bot.bot.user_id)[0]["event_id"]
    await bob.say(group, "and the weather?",
                  **{"m.relates_to": {"m.in_reply_to": {"event_id": bot_event}}})
    await wait_turns(bot, 5)
    await bob.sync_until(lambda: len(bob.bot_texts(group, bot.bot.user_id)) >= 2)
    assert bob.bot_texts(group, bot.bot.user_id)[-1] == "echo: Bob: and the weather?"
    channel = await app.channels.by_ref("matrix", group)
    assert channel is not None and channel.kind is ChannelKind.SHARED
    rows = await app.transcript.for_channel(channel.id)
    assert "thanks" in [r.content for r in rows] and reply_to
    alice_person = await app.persons.by_identity(f"matrix:{alice.id}")
    assert alice_person is not None and channel.owner_id != alice_person.id


async def test_location_becomes_a_location_row(
    start_bot: StartBot, people: Callable[[str], Human], app: App, fake_openai: FakeOpenAI
) -> None:
    fake_openai.reply("Nice spot!")
    bot = await start_bot()
    alice = people("Alice")
    room = await open_room(alice, bot)
    sent = await alice.client.room_send(room, "m.room.message", {
        "msgtype": "m.location", "body": "Alexanderplatz", "geo_uri": "geo:52.5219,13.4132"})
    assert isinstance(sent, RoomSendResponse)
    await wait_turns(bot, 1)
    channel = await app.channels.by_ref("matrix", room)
    assert channel is not None
    rows = await app.transcript.for_channel(channel.id)
    user_rows = [r for r in rows if r.role is Role.USER]
    assert [(r.content, r.lat, r.lon) for r in user_rows] == [("Alexanderplatz", 52.5219, 13.4132)]
    assert user_rows[0].platform_msg_id == sent.event_id
    assert "52.52190, 13.41320" in json.dumps(turn_request(fake_openai, "Alexanderplatz"))
    # A message outside a turn (what a reminder uses).
    ids = await bot.send(room, "Reminder: water the plants")
    await alice.sync_until(lambda: "Reminder: water the plants" in alice.bot_texts(
        room, bot.bot.user_id))
    assert len(ids) == 1


async def test_failing_model_gives_an_honest_short_reply(
    start_bot: StartBot, people: Callable[[str], Human], fake_openai: FakeOpenAI
) -> None:
    fake_openai.fail_next(status=500, times=10)
    bot = await start_bot()
    alice = people("Alice")
    room = await open_room(alice, bot)
    await alice.say(room, "hello?")
    await wait_turns(bot, 1)
    await alice.sync_until(lambda: len(alice.bot_texts(room, bot.bot.user_id)) >= 1)
    [text] = alice.bot_texts(room, bot.bot.user_id)
    assert text.startswith("Sorry") and "saved" in text and "Traceback" not in text


async def test_link_a_console_identity_from_matrix(
    start_bot: StartBot, people: Callable[[str], Human], app: App, fake_openai: FakeOpenAI,
    clock: ManualClock,
) -> None:
    from strata.core.types import InboundMessage

    fake_openai.responder = lambda body: "noted"
    said = InboundMessage("console", "alice/default", "alice", "I play the cello", clock.now(),
                          sender_name="alice")
    await app.processor.handle(said)
    issued = await app.processor.handle(InboundMessage(
        "console", "alice/default", "alice", "/link", clock.now(), sender_name="alice"))
    assert issued is not None
    code = issued.reply.split("Your link code is ", 1)[1].split(".", 1)[0]
    bot = await start_bot()
    alice = people("Alice")
    room = await open_room(alice, bot)
    await alice.say(room, f"/link {code}")
    await wait_turns(bot, 1)
    await alice.sync_until(lambda: len(alice.bot_texts(room, bot.bot.user_id)) >= 1)
    [answer] = alice.bot_texts(room, bot.bot.user_id)
    assert answer.startswith("Linked") and f"matrix:{alice.id}" in answer
    home = await app.persons.by_identity("console:alice")
    assert home is not None
    assert await app.persons.by_identity(f"matrix:{alice.id}") == home
    dm = await app.channels.by_ref("matrix", room)
    assert dm is not None and dm.owner_id == home.id
    await alice.say(room, "what do I play?")
    await wait_turns(bot, 2)
    owned = [r.content for r in await app.transcript.for_owner(home.id)]
    assert "I play the cello" in owned and "what do I play?" in owned


async def test_typing_is_shown_while_the_model_works(
    start_bot: StartBot, people: Callable[[str], Human], fake_openai: FakeOpenAI
) -> None:
    fake_openai.fail_next("slow", seconds=1.5, path="chat")  # then it answers
    fake_openai.reply("done thinking")
    bot = await start_bot()
    alice = people("Alice")
    room = await open_room(alice, bot)
    await alice.say(room, "think hard")
    await alice.sync_until(lambda: any(bot.bot.user_id in users for users in alice.typing[room]))
    await wait_turns(bot, 1)
    await alice.sync_until(lambda: alice.bot_texts(room, bot.bot.user_id) == ["done thinking"])
    await alice.sync_until(lambda: alice.typing[room][-1] == [])  # and off afterwards


async def encrypted_dm_message(alice: Human, bot: MatrixAdapter, text: str) -> str:
    """Alice (an e2e client) opens an encrypted DM with the bot and sends `text` encrypted."""
    await alice.client.keys_upload()
    room = await open_room(alice, bot, encrypted=True)
    resp = await alice.client.room_send(
        room, "m.room.message", {"msgtype": "m.text", "body": text},
        ignore_unverified_devices=True)
    assert isinstance(resp, RoomSendResponse), resp
    return room


async def test_encrypted_dm_is_read_and_answered_encrypted(
    start_bot: StartBot, synapse: Synapse, fake_openai: FakeOpenAI, tmp_path: Path, app: App
) -> None:
    fake_openai.responder = lambda body: f"secretly: {last_user_text(body)}"
    bot = await start_bot(encryption=True)
    assert bot.client is not None and bot.client.olm is not None
    alice = Human(synapse, "Alice", store=tmp_path / "alice-store")
    try:
        room = await encrypted_dm_message(alice, bot, "the vault code is 1234")
        await wait_turns(bot, 1)
        await alice.sync_until(
            lambda: alice.bot_texts(room, bot.bot.user_id) == ["secretly: the vault code is 1234"])
        # On the wire both messages were m.room.encrypted; the server never saw the text.
        wire = raw_messages(synapse, alice, room)
        texts = [e for e in wire if e.get("type") == "m.room.message"]
        assert texts == [] and any(e.get("type") == "m.room.encrypted" for e in wire)
        channel = await app.channels.by_ref("matrix", room)
        assert channel is not None
        rows = await app.transcript.for_channel(channel.id)
        assert rows[0].content == "the vault code is 1234"
    finally:
        await alice.close()


async def test_undecryptable_message_gets_an_honest_answer(
    start_bot: StartBot, synapse: Synapse, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    bot = await start_bot(encryption=False)  # a bot without keys cannot read encrypted rooms
    alice = Human(synapse, "Alice", store=tmp_path / "alice-store")
    try:
        room = await encrypted_dm_message(alice, bot, "can you read this?")
        await alice.sync_until(lambda: len(alice.bot_texts(room, bot.bot.user_id)) >= 1)
        [text] = alice.bot_texts(room, bot.bot.user_id)
        assert text.startswith("I couldn't decrypt that message")
        assert fake_openai.chat_requests() == []
    finally:
        await alice.close()


async def test_password_login_and_bad_credentials(
    synapse: Synapse, app: App, tmp_path: Path, people: Callable[[str], Human],
    fake_openai: FakeOpenAI,
) -> None:
    from strata.app.adapter_wiring import build_matrix_adapter, configured_adapters
    from strata.core.clock import SystemClock
    from strata.core.errors import PlatformError

    fake_openai.reply("hello by password")
    localpart = _name("strata")
    user = synapse.register(localpart, password="correct horse battery", displayname="Strata")
    base = MatrixSettings(homeserver=synapse.base_url, user=user.user_id,
                          store_path=str(tmp_path / "store"), device_id="STRATATEST",
                          encryption=False, request_timeout=10, max_timeouts=1)
    assert build_matrix_adapter(Settings(matrix=base)) is None  # no password or token
    configured = app.settings.model_copy(
        update={"matrix": base.model_copy(update={"password": "correct horse battery"})})
    [bot] = configured_adapters(configured, SystemClock())
    assert isinstance(bot, MatrixAdapter)
    bot.poll_timeout_ms = 500
    # start() serves until stop(), as `strata run` (App.serve) expects of every adapter.
    serving = asyncio.create_task(bot.start(app.turns()))
    for _ in range(200):
        if bot._loop_task is not None or serving.done():
            break
        await asyncio.sleep(0.05)
    try:
        assert not serving.done()
        assert bot.client is not None and bot.client.device_id == "STRATATEST"
        alice = people("Alice")
        room = await open_room(alice, bot)
        await alice.say(room, "hi")
        await alice.sync_until(lambda: alice.bot_texts(room, bot.bot.user_id) == [
            "hello by password"])
        assert not serving.done()
    finally:
        await bot.stop()
        await asyncio.wait_for(serving, 10)
    wrong = MatrixAdapter(base.model_copy(update={"password": "wrong"}))
    with pytest.raises(PlatformError, match="login"):
        await wrong.connect(app.turns())
    bad_token = MatrixAdapter(base.model_copy(update={"access_token": "syt_nope"}))
    with pytest.raises(PlatformError, match="refused"):
        await bad_token.connect(app.turns())
