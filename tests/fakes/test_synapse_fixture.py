"""The Synapse fixture works with the real matrix-nio ``AsyncClient``.

Covers what the Matrix adapter relies on: a DM (``is_direct``) invite that the bot joins, a
text message in and an HTML reply out, an ``m.location`` event, an ``m.replace`` edit, and a
429 (``M_LIMIT_EXCEEDED``) from a strict ``rc_message`` limit that nio's retry rides out.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from nio import (
    AsyncClient,
    AsyncClientConfig,
    Event,
    InviteMemberEvent,
    JoinResponse,
    RoomCreateResponse,
    RoomPreset,
    RoomSendError,
    RoomSendResponse,
    SyncResponse,
)

from tests.fakes.synapse import (
    STRICT_MESSAGE_LIMIT,
    RegisteredUser,
    Synapse,
)

pytestmark = pytest.mark.asyncio

#: Bounded retries, so a misbehaving server fails a test instead of hanging it.
CONFIG = AsyncClientConfig(max_limit_exceeded=2, max_timeouts=2, request_timeout=10)
SYNC_DEADLINE = 15.0


def _client(
    server: Synapse, user: RegisteredUser, config: AsyncClientConfig = CONFIG
) -> AsyncClient:
    client = AsyncClient(server.base_url, config=config)
    client.restore_login(user.user_id, user.device_id, user.access_token)
    return client


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def _sync_until(
    client: AsyncClient,
    find: Callable[[SyncResponse], Any],
    deadline: float = SYNC_DEADLINE,
) -> Any:
    """Sync (long-polling 500 ms) until ``find`` returns something truthy; return it."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        resp = await client.sync(timeout=500)
        assert isinstance(resp, SyncResponse), resp
        found = find(resp)
        if found:
            return found
    raise AssertionError(f"{client.user_id} did not see the expected sync within {deadline}s")


def _timeline_event(
    room_id: str, match: Callable[[Event], bool]
) -> Callable[[SyncResponse], Event | None]:
    def find(resp: SyncResponse) -> Event | None:
        room = resp.rooms.join.get(room_id)
        if room is None:
            return None
        return next((ev for ev in room.timeline.events if match(ev)), None)

    return find


@dataclass
class DM:
    """Alice and the bot, both joined to a direct-message room."""

    alice: AsyncClient
    bot: AsyncClient
    room_id: str
    invite_state: list[Any]


async def _open_dm(server: Synapse) -> DM:
    alice_user = server.register(_name("alice"))
    bot_user = server.register(_name("bot"))
    alice, bot = _client(server, alice_user), _client(server, bot_user)
    created = await alice.room_create(
        is_direct=True, preset=RoomPreset.trusted_private_chat, invite=[bot_user.user_id]
    )
    assert isinstance(created, RoomCreateResponse), created
    room_id = created.room_id
    invite = await _sync_until(bot, lambda r: r.rooms.invite.get(room_id))
    joined = await bot.join(room_id)
    assert isinstance(joined, JoinResponse), joined
    # Alice sees the bot's join before she talks, as a real user would.
    await _sync_until(
        alice,
        _timeline_event(
            room_id,
            lambda ev: (
                ev.source.get("type") == "m.room.member"
                and ev.source.get("state_key") == bot_user.user_id
                and ev.source["content"].get("membership") == "join"
            ),
        ),
    )
    return DM(alice, bot, room_id, invite.invite_state)


@pytest_asyncio.fixture
async def dm(synapse: Synapse) -> AsyncIterator[DM]:
    room = await _open_dm(synapse)
    yield room
    await room.alice.close()
    await room.bot.close()


async def test_dm_invite_message_and_html_reply(synapse: Synapse) -> None:
    began = time.monotonic()
    room = await _open_dm(synapse)
    try:
        setup = time.monotonic() - began
        # nio pops "content" out of invite-state event sources: read the parsed attribute.
        bot_member = [
            ev
            for ev in room.invite_state
            if isinstance(ev, InviteMemberEvent) and ev.state_key == room.bot.user_id
        ]
        assert bot_member and bot_member[0].membership == "invite"
        assert bot_member[0].content.get("is_direct") is True

        t0 = time.monotonic()
        sent = await room.alice.room_send(
            room.room_id, "m.room.message", {"msgtype": "m.text", "body": "hello bot"}
        )
        assert isinstance(sent, RoomSendResponse), sent
        incoming = await _sync_until(
            room.bot,
            _timeline_event(
                room.room_id,
                lambda ev: (
                    ev.sender == room.alice.user_id and getattr(ev, "body", None) == "hello bot"
                ),
            ),
        )
        assert incoming.event_id == sent.event_id

        reply = await room.bot.room_send(
            room.room_id,
            "m.room.message",
            {
                "msgtype": "m.text",
                "body": "hi **alice**",
                "format": "org.matrix.custom.html",
                "formatted_body": "hi <strong>alice</strong>",
            },
        )
        assert isinstance(reply, RoomSendResponse), reply
        got = await _sync_until(
            room.alice,
            _timeline_event(room.room_id, lambda ev: ev.event_id == reply.event_id),
        )
        round_trip = time.monotonic() - t0
        assert got.sender == room.bot.user_id
        assert got.body == "hi **alice**"
        assert got.format == "org.matrix.custom.html"
        assert got.formatted_body == "hi <strong>alice</strong>"
        print(
            f"\nDM setup {setup:.3f}s, message + reply round trip {round_trip:.3f}s,"
            f" synapse cold start {synapse.startup_seconds:.2f}s"
        )
    finally:
        await room.alice.close()
        await room.bot.close()


async def test_location_round_trip(dm: DM) -> None:
    content = {"msgtype": "m.location", "body": "Alexanderplatz", "geo_uri": "geo:52.5219,13.4132"}
    sent = await dm.alice.room_send(dm.room_id, "m.room.message", content)
    assert isinstance(sent, RoomSendResponse), sent
    got = await _sync_until(
        dm.bot, _timeline_event(dm.room_id, lambda ev: ev.event_id == sent.event_id)
    )
    assert got.source["content"]["msgtype"] == "m.location"
    assert got.source["content"]["geo_uri"] == "geo:52.5219,13.4132"
    assert got.source["content"]["body"] == "Alexanderplatz"


async def test_edit_with_m_replace(dm: DM) -> None:
    first = await dm.bot.room_send(
        dm.room_id, "m.room.message", {"msgtype": "m.text", "body": "thinking…"}
    )
    assert isinstance(first, RoomSendResponse), first
    new_content = {"msgtype": "m.text", "body": "the answer is 42"}
    edit = await dm.bot.room_send(
        dm.room_id,
        "m.room.message",
        {
            "msgtype": "m.text",
            "body": "* the answer is 42",
            "m.new_content": new_content,
            "m.relates_to": {"rel_type": "m.replace", "event_id": first.event_id},
        },
    )
    assert isinstance(edit, RoomSendResponse), edit
    got = await _sync_until(
        dm.alice, _timeline_event(dm.room_id, lambda ev: ev.event_id == edit.event_id)
    )
    relates = got.source["content"]["m.relates_to"]
    assert relates == {"rel_type": "m.replace", "event_id": first.event_id}
    assert got.source["content"]["m.new_content"] == new_content


async def test_strict_ratelimit_gives_429_and_nio_retries(
    synapse_strict: Synapse,
) -> None:
    user = synapse_strict.register(_name("spammer"))
    # No retries: the 429 comes straight back as a RoomSendError.
    eager = _client(synapse_strict, user, AsyncClientConfig(max_limit_exceeded=0, max_timeouts=2))
    patient = _client(synapse_strict, user)  # CONFIG: up to 2 retries on 429
    try:
        created = await eager.room_create(name="flood")
        assert isinstance(created, RoomCreateResponse), created
        room_id = created.room_id

        limited: RoomSendError | None = None
        burst = int(STRICT_MESSAGE_LIMIT["burst_count"])
        for i in range(burst + 5):
            resp = await eager.room_send(
                room_id, "m.room.message", {"msgtype": "m.text", "body": f"spam {i}"}
            )
            if isinstance(resp, RoomSendError):
                limited = resp
                break
        assert limited is not None, "no 429 from the strict rc_message limit"
        assert limited.status_code == "M_LIMIT_EXCEEDED"
        assert limited.retry_after_ms and limited.retry_after_ms > 0

        seen_429: list[int | None] = []

        async def on_error(resp: Any) -> None:
            seen_429.append(resp.retry_after_ms)

        patient.add_response_callback(on_error, RoomSendError)
        # Keep sending until nio has met (and slept through) a 429: a loaded machine may be
        # slow enough for the bucket to refill between two sends.
        waited = 0.0
        for i in range(burst + 5):
            t0 = time.monotonic()
            ok = await patient.room_send(
                room_id, "m.room.message", {"msgtype": "m.text", "body": f"patient {i}"}
            )
            waited = time.monotonic() - t0
            assert isinstance(ok, RoomSendResponse), ok
            if seen_429:
                break
        assert seen_429, "expected nio to hit (and sleep through) at least one 429"
        assert waited >= min(ms or 0 for ms in seen_429) / 1000 * 0.9
        print(
            f"\nfirst 429 retry_after_ms={limited.retry_after_ms}; nio slept through"
            f" {len(seen_429)} x 429 {seen_429} and succeeded after {waited:.2f}s"
        )
    finally:
        await eager.close()
        await patient.close()

