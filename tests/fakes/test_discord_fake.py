"""Tests proving the real ``discord.Client`` (discord.py) works against :mod:`discord_api`.

Every test logs a real client in over HTTP and a real WebSocket on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import discord
import pytest
from discord import app_commands

from .discord_api import (
    INTENT_DIRECT_MESSAGES,
    INTENT_MESSAGE_CONTENT,
    FakeDiscord,
    connect_client,
    running_fake_discord,
)

ALICE = 111_111_111_111_111_111


def dm_intents(*, message_content: bool = True) -> discord.Intents:
    intents = discord.Intents.default()
    intents.message_content = message_content
    intents.dm_messages = True
    return intents


class EchoClient(discord.Client):
    """Replies to DMs with ``echo: <text>`` and then edits the reply, like a streaming bot."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(guild_ready_timeout=0.05, **kwargs)
        self.received: list[discord.Message] = []
        self.own_echoes: list[discord.Message] = []

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """discord.py sleeps 5 s before every non-initial IDENTIFY; skip that in tests."""

    async def on_message(self, message: discord.Message) -> None:
        if self.user is not None and message.author.id == self.user.id:
            self.own_echoes.append(message)  # Discord echoes the bot's own messages back
            return
        self.received.append(message)
        if message.guild is not None:
            return
        reply = await message.channel.send(f"echo: {message.content}")
        await reply.edit(content=f"echo: {message.content} (done)")


@pytest.fixture
def fake() -> Iterator[FakeDiscord]:
    with running_fake_discord() as server:
        yield server


async def _shutdown(client: discord.Client, task: asyncio.Task[None]) -> float:
    started = time.monotonic()
    await client.close()
    await asyncio.wait_for(task, timeout=3)
    return time.monotonic() - started


@pytest.fixture
async def echo(fake: FakeDiscord) -> AsyncIterator[EchoClient]:
    client = EchoClient(intents=dm_intents())
    task = await connect_client(client, fake)
    yield client
    await _shutdown(client, task)


@pytest.mark.asyncio
async def test_login_identify_and_ready(fake: FakeDiscord, echo: EchoClient) -> None:
    assert echo.user is not None and echo.user.id == fake.bot_id
    assert echo.application_id == fake.application_id
    intents = fake.intents
    assert intents == dm_intents().value
    assert intents & INTENT_MESSAGE_CONTENT and intents & INTENT_DIRECT_MESSAGES
    assert fake.identifies[0]["token"] == fake.token
    await fake.wait_for(lambda f: f.heartbeats >= 1)  # discord.py beats right after HELLO
    routes = [(r.method, r.route) for r in fake.requests]
    assert routes[:2] == [("GET", "/users/@me"), ("GET", "/oauth2/applications/@me")]
    assert fake.connected_sessions == 1
    # discord.py asks for transport compression; the fake speaks it (zlib, or zstd if present)
    assert fake.gateway_compression[0] in ("zlib-stream", "zstd-stream")


@pytest.mark.asyncio
async def test_dm_is_received_replied_and_edited(fake: FakeDiscord, echo: EchoClient) -> None:
    pushed = fake.push_dm(ALICE, "alice", "hello there")
    dm_id = int(pushed["channel_id"])

    sent = await fake.wait_for(lambda f: [m for m in f.bot_messages(dm_id) if m.edited])
    assert [m.content for m in sent] == ["echo: hello there (done)"]
    assert sent[0].edits == ("echo: hello there",)

    [incoming] = echo.received
    assert isinstance(incoming.channel, discord.DMChannel)
    assert incoming.channel.id == dm_id
    assert incoming.author.id == ALICE and incoming.author.name == "alice"
    assert incoming.content == "hello there"
    assert incoming.guild is None

    await fake.wait_for(lambda f: echo.own_echoes)
    assert echo.own_echoes[0].id == sent[0].id
    assert fake.requests_to("POST", "/channels/{channel_id}/messages")[0].json["content"] == (
        "echo: hello there"
    )
    assert len(fake.requests_to("PATCH", "/channels/{channel_id}/messages/{message_id}")) == 1


@pytest.mark.asyncio
async def test_message_over_2000_chars_is_rejected(fake: FakeDiscord, echo: EchoClient) -> None:
    fake.add_user(ALICE, "alice")
    user = await echo.fetch_user(ALICE)
    channel = await echo.create_dm(user)
    assert channel.id == fake.dm_channel_id(ALICE)

    with pytest.raises(discord.HTTPException) as excinfo:
        await channel.send("x" * 2001)
    assert excinfo.value.status == 400
    assert excinfo.value.code == 50035
    assert "2000 or fewer" in excinfo.value.text

    ok = await channel.send("x" * 2000)
    assert fake.message(ok.id) is not None
    assert fake.bot_messages(channel.id)[-1].content == "x" * 2000


@pytest.mark.asyncio
async def test_same_nonce_with_enforce_nonce_returns_the_earlier_message(
    fake: FakeDiscord, echo: EchoClient,
) -> None:
    """Discord's rule: a create with `enforce_nonce` and a nonce this author used in the past
    few minutes returns that message and creates none; without `enforce_nonce` a nonce only
    tags the message. discord.py sends `enforce_nonce` with every nonce, so the raw route
    checks the other case."""
    fake.add_user(ALICE, "alice")
    channel = await echo.create_dm(await echo.fetch_user(ALICE))

    first = await channel.send("the answer", nonce="a1b2c3")
    again = await channel.send("the answer, sent again", nonce="a1b2c3")
    other = await channel.send("another answer", nonce="d4e5f6")
    assert again.id == first.id and again.content == "the answer"
    assert other.id != first.id
    assert [m.content for m in fake.bot_messages(channel.id)] == ["the answer", "another answer"]

    async with aiohttp.ClientSession() as http:
        resp = await http.post(f"{fake.api_url}/channels/{channel.id}/messages",
                               json={"content": "tagged only", "nonce": "a1b2c3"},
                               headers={"Authorization": f"Bot {fake.token}"})
        assert resp.status == 200
        assert (await resp.json())["id"] != str(first.id)

    with pytest.raises(discord.HTTPException) as excinfo:
        await channel.send("too long a nonce", nonce="n" * 26)
    assert excinfo.value.status == 400 and "25 or fewer" in excinfo.value.text
    assert len(fake.bot_messages(channel.id)) == 3


@pytest.mark.asyncio
async def test_reply_file_reaction_and_delete(fake: FakeDiscord, echo: EchoClient) -> None:
    pushed = fake.push_dm(ALICE, "alice", "send me a file")
    await fake.wait_for(lambda f: echo.received)
    incoming = echo.received[0]
    reply = await incoming.reply("here", file=discord.File(io.BytesIO(b"hello"), "note.txt"))
    assert reply.reference is not None and reply.reference.message_id == int(pushed["id"])
    assert [a.filename for a in reply.attachments] == ["note.txt"]
    assert fake.attachment_bytes(reply.id) == {"note.txt": b"hello"}
    assert await reply.attachments[0].read() == b"hello"  # served by the fake's CDN route

    await reply.add_reaction("\N{THUMBS UP SIGN}")
    assert fake.reactions == [(reply.channel.id, reply.id, "\N{THUMBS UP SIGN}")]
    await reply.delete()
    record = fake.message(reply.id)
    assert record is not None and record.deleted
    assert reply.id not in [m.id for m in fake.bot_messages()]


@pytest.mark.asyncio
async def test_429_is_waited_out_and_retried(fake: FakeDiscord, echo: EchoClient) -> None:
    fake.add_user(ALICE, "alice")
    channel = await echo.create_dm(await echo.fetch_user(ALICE))
    fake.fail_next("POST /channels/{id}/messages", status=429, retry_after=0.2)

    started = time.monotonic()
    message = await channel.send("after the storm")
    assert time.monotonic() - started >= 0.2
    assert message.content == "after the storm"
    statuses = [r.status for r in fake.requests_to("POST", "/channels/{channel_id}/messages")]
    assert statuses == [429, 200]


@pytest.mark.asyncio
async def test_bucket_headers_make_client_wait_instead_of_429() -> None:
    with running_fake_discord(rate_limit=(2, 0.3)) as fake:
        client = EchoClient(intents=dm_intents())
        task = await connect_client(client, fake)
        try:
            fake.add_user(ALICE, "alice")
            channel = await client.create_dm(await client.fetch_user(ALICE))
            started = time.monotonic()
            for n in range(3):
                await channel.send(f"burst {n}")
            assert time.monotonic() - started >= 0.2  # pre-emptively slept on X-RateLimit-*
            sends = fake.requests_to("POST", "/channels/{channel_id}/messages")
            assert [r.status for r in sends] == [200, 200, 200]
        finally:
            await _shutdown(client, task)


@pytest.mark.asyncio
async def test_cloudflare_style_429_is_not_retried(fake: FakeDiscord, echo: EchoClient) -> None:
    fake.add_user(ALICE, "alice")
    channel = await echo.create_dm(await echo.fetch_user(ALICE))
    fake.fail_next("POST /channels/{id}/messages", status=429, retry_after=0.1, via=False)
    with pytest.raises(discord.HTTPException) as excinfo:
        await channel.send("blocked")
    assert excinfo.value.status == 429


@pytest.mark.asyncio
async def test_typing_context_manager_posts_typing(fake: FakeDiscord, echo: EchoClient) -> None:
    fake.add_user(ALICE, "alice")
    channel = await echo.create_dm(await echo.fetch_user(ALICE))
    async with channel.typing():
        await fake.wait_for(lambda f: f.typing_calls)
        await channel.send("typed")
    assert fake.typing_calls == [channel.id]


@pytest.mark.asyncio
async def test_clean_shutdown_is_quick(fake: FakeDiscord) -> None:
    client = EchoClient(intents=dm_intents())
    task = await connect_client(client, fake)
    assert fake.connected_sessions == 1
    elapsed = await _shutdown(client, task)
    assert elapsed < 1.0
    assert task.exception() is None
    await fake.wait_for(lambda f: f.connected_sessions == 0)


@pytest.mark.asyncio
async def test_bad_token_is_login_failure(fake: FakeDiscord) -> None:
    client = discord.Client(intents=dm_intents())
    with pytest.raises(discord.LoginFailure):
        await client.login("not-the-token")
    await client.close()


@pytest.mark.asyncio
async def test_rest_errors_are_discord_shaped(fake: FakeDiscord) -> None:
    headers = {"Authorization": f"Bot {fake.token}"}
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.get(f"{fake.api_url}/no/such/route") as resp:
            assert resp.status == 404
            assert resp.headers["Content-Type"] == "application/json"
            assert await resp.json() == {"message": "404: Not Found", "code": 0}
        async with session.get(f"{fake.api_url}/gateway/bot") as resp:
            body = await resp.json()
            assert body["url"] == fake.gateway_url and body["shards"] == 1
        async with session.get(f"{fake.api_url}/channels/1") as resp:
            assert resp.status == 404 and (await resp.json())["code"] == 10003


@pytest.mark.asyncio
async def test_reconnect_resumes_and_replays(fake: FakeDiscord, echo: EchoClient) -> None:
    fake.request_reconnect()
    await fake.wait_for(lambda f: f.resumes == 1 and f.connected_sessions == 1)
    fake.push_dm(ALICE, "alice", "still there?")
    await fake.wait_for(lambda f: [m for m in f.bot_messages() if m.edited])
    assert echo.received[-1].content == "still there?"
    assert len(fake.identifies) == 1  # resumed, not re-identified


@pytest.mark.asyncio
async def test_invalid_session_makes_client_identify_again(
    fake: FakeDiscord, echo: EchoClient
) -> None:
    fake.invalidate_sessions(resumable=False)
    await fake.wait_for(lambda f: len(f.identifies) == 2 and f.connected_sessions == 1)
    fake.push_dm(ALICE, "alice", "new session")
    await fake.wait_for(lambda f: [m for m in f.bot_messages() if m.edited])
    assert fake.resumes == 0


@pytest.mark.asyncio
async def test_guild_message_content_needs_intent_or_mention(fake: FakeDiscord) -> None:
    ids = fake.add_guild("Strata Lab", ("general",))
    gid, general = ids["guild_id"], ids["general"]
    client = EchoClient(intents=dm_intents(message_content=False))
    task = await connect_client(client, fake)
    try:
        await fake.wait_for(lambda f: client.get_guild(gid))
        fake.push_guild_message(gid, general, ALICE, "alice", "secret words")
        fake.push_guild_message(gid, general, ALICE, "alice", f"<@{fake.bot_id}> hi bot")
        await fake.wait_for(lambda f: len(client.received) == 2)
        hidden, mentioned = client.received
        assert isinstance(hidden.channel, discord.TextChannel) and hidden.guild is not None
        assert hidden.guild.id == gid and hidden.channel.name == "general"
        assert hidden.content == ""
        assert mentioned.content == f"<@{fake.bot_id}> hi bot"
        assert client.user in mentioned.mentions
    finally:
        await _shutdown(client, task)


@pytest.mark.asyncio
async def test_slash_command_sync_and_interaction(fake: FakeDiscord) -> None:
    client = discord.Client(intents=dm_intents(), guild_ready_timeout=0.05)
    tree = app_commands.CommandTree(client)

    @tree.command(name="ping", description="Check the bot is alive")
    async def ping(interaction: discord.Interaction) -> None:
        await interaction.response.send_message("pong")
        await interaction.edit_original_response(content="pong!")
        await interaction.followup.send("and a follow-up")

    task = await connect_client(client, fake)
    try:
        synced = await tree.sync()
        assert [c.name for c in synced] == ["ping"]
        assert fake.commands()[0]["description"] == "Check the bot is alive"

        fake.push_interaction(ALICE, "alice", "ping")
        [response] = await fake.wait_for(lambda f: f.interaction_responses)
        assert response["type"] == 4 and response["data"]["content"] == "pong"
        dm_id = fake.dm_channel_id(ALICE)
        assert dm_id is not None
        await fake.wait_for(lambda f: len(f.bot_messages(dm_id)) == 2)
        sent = fake.bot_messages(dm_id)
        assert [m.content for m in sent] == ["pong!", "and a follow-up"]
        assert sent[0].edits == ("pong",)
    finally:
        await _shutdown(client, task)
