"""The Discord adapter: a discord.py client living inside the app's event loop.

`start()` logs in, runs the gateway connection as a task (never `Client.run`, which owns the
loop) and serves until `stop()`, which lets running turns finish (briefly) and closes the
connection; `connect()` is the first half alone (it returns once the bot is ready).
Every DM is submitted to the turn scheduler (`strata.bot.scheduler`: stored and its turn queued
before `on_message` returns) and answered by whichever process on the database claims the
chat; several processes may hold gateway sessions for one bot, and a DM that reaches each of
them is queued once. The reply is shown through `room()` with the typing indicator on, streamed
by throttled edits of one message and split at Discord's 2,000 characters on paragraph/sentence
boundaries (`strata.core.sending`; the reply operations are in `sending`). discord.py sleeps
out REST 429s itself using Discord's headers; a wait longer than `max_ratelimit_timeout`
surfaces as `RateLimited`, which is turned into `PlatformRateLimited` so streaming skips edits
and sends are retried later. The memory commands arrive as DM text (`/forget cats`) and are
also slash commands, answered at once (`strata.bot.delivery.deliver_turn`). Imports
`strata.adapters.*`, `strata.bot.delivery`, `strata.core` and discord.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator, Sequence

import discord
from discord import app_commands

from strata.adapters.discord import mapping
from strata.adapters.discord.sending import (
    MESSAGE_LIMIT,
    PLATFORM_ERRORS,
    dm_ops,
    interaction_ops,
    rate_limited,
)
from strata.adapters.runtime import ReplyOps, send_text
from strata.bot.delivery import deliver_turn
from strata.core.config import Settings
from strata.core.errors import ConfigError, PlatformError
from strata.core.ports import Clock, Turns
from strata.core.types import InboundMessage, Intake, ReplyKey

log = logging.getLogger(__name__)

# discord.py sleeps through shorter 429 waits itself (30 s is the smallest value it accepts).
MAX_RATELIMIT_WAIT = 30.0

UNLISTED_TEXT = "Hi! I'm a private bot and only talk with people on my allowlist — sorry."
DM_ONLY_TEXT = "I only chat in direct messages — send me a DM."

def intents(*, message_content: bool = True) -> discord.Intents:
    """DMs, plus guild messages only to point mentions to DMs. MESSAGE CONTENT is privileged
    (it must be enabled in the Developer Portal); Discord sends the text of DMs and mentions
    without it too, so it is asked for first and dropped when Discord refuses it."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    wanted.dm_messages = True
    wanted.guild_messages = True
    wanted.message_content = message_content
    return wanted


class _Client(discord.Client):
    def __init__(self, adapter: DiscordAdapter, **options: object) -> None:
        # Strata never joins voice: discord.py's warnings about missing voice libraries are noise.
        discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
        super().__init__(**options)  # type: ignore[arg-type]
        self.adapter = adapter
        self.tree = app_commands.CommandTree(self)

    async def on_message(self, message: discord.Message) -> None:
        await self.adapter.on_message(message)


class DiscordAdapter:
    """Discord DMs ↔ the turn handler. See the module docstring."""

    platform = mapping.PLATFORM
    message_limit = MESSAGE_LIMIT

    def __init__(
        self,
        token: str,
        *,
        commands: Sequence[tuple[str, str]] = (),
        tell_unlisted: bool = True,
        edit_interval: float = 1.0,
        sync_commands: bool = True,
        guild_ready_timeout: float = 2.0,
        ready_timeout: float = 30.0,
        shutdown_grace: float = 10.0,
    ) -> None:
        self._token = token
        self._commands = mapping.slash_commands(commands)
        self._tell_unlisted = tell_unlisted
        self._edit_interval = edit_interval
        self._sync = sync_commands
        self._guild_ready_timeout = guild_ready_timeout
        self._ready_timeout = ready_timeout
        self._shutdown_grace = shutdown_grace
        self._client: _Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._turns: Turns | None = None
        self._closing = False
        self._inflight: set[asyncio.Task[object]] = set()
        self._told: set[str] = set()  # senders already told they are not on the allowlist
        self._pointed: set[int] = set()  # server channels already pointed to DMs

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def client(self) -> discord.Client | None:
        return self._client

    async def start(self, turns: Turns) -> None:
        """Connect, then serve until `stop()`; the app runs this as a task. A fatal gateway
        error (the token revoked, say) ends it with a `PlatformError`."""
        await self.connect(turns)
        await self.wait_closed()

    async def wait_closed(self) -> None:
        """Wait until the gateway connection ends; raise if it ended by an error."""
        task = self._task
        if task is None:
            return
        await asyncio.wait({task})
        error = None if task.cancelled() else task.exception()
        if error is not None:
            raise PlatformError(f"the Discord gateway connection ended: {error}") from error

    async def connect(self, turns: Turns) -> None:
        """Log in, run the gateway connection as a task and return once the bot is ready."""
        if self._client is not None:
            raise RuntimeError("the Discord adapter is already started")
        self._turns = turns
        self._closing = False
        error = await self._connect(intents(message_content=True))
        if isinstance(error, discord.PrivilegedIntentsRequired):
            log.warning(
                "discord: the MESSAGE CONTENT intent is not enabled for this bot in the "
                "Developer Portal (Bot → Privileged Gateway Intents); going on without it: "
                "Discord still sends the text of DMs"
            )
            error = await self._connect(intents(message_content=False))
        if error is not None:
            raise PlatformError(f"cannot connect to the Discord gateway: {error}")
        client, task = self._client, self._task
        assert client is not None and task is not None
        # A later gateway failure is raised by wait_closed() and logged here.
        task.add_done_callback(_log_gateway_end)
        if self._commands and self._sync:
            try:
                await client.tree.sync()
            except PLATFORM_ERRORS as exc:
                log.warning("discord: could not register the slash commands: %s", exc)
        turns.attach(self)  # queued turns of Discord DMs (a crash's too) run from now on
        log.info("discord: connected as %s", client.user)

    async def _connect(self, wanted: discord.Intents) -> BaseException | str | None:
        """Log in and connect with `wanted` intents; None once ready, else why not (and the
        client is closed again)."""
        client = _Client(
            self,
            intents=wanted,
            guild_ready_timeout=self._guild_ready_timeout,
            max_ratelimit_timeout=MAX_RATELIMIT_WAIT,
            # The model's words must never ping @everyone or anyone else.
            allowed_mentions=discord.AllowedMentions.none(),
        )
        for name, description in self._commands:
            client.tree.add_command(self._slash_command(name, description))
        self._client = client
        try:
            await client.login(self._token)
        except discord.LoginFailure:
            await self._close_client()
            raise ConfigError(
                "discord.token (STRATA_DISCORD_TOKEN): Discord refused the bot token"
            ) from None
        except PLATFORM_ERRORS as exc:
            await self._close_client()
            raise PlatformError(f"cannot reach Discord to log in: {exc}") from None
        task = asyncio.create_task(client.connect(reconnect=True), name="discord-gateway")
        self._task = task
        ready = asyncio.create_task(client.wait_until_ready())
        done, _ = await asyncio.wait(
            {task, ready}, timeout=self._ready_timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if ready in done:
            return None
        ready.cancel()
        error = task.exception() if task in done and not task.cancelled() else None
        await self._close_client()
        return error or f"not ready within {self._ready_timeout:g}s"

    async def drain(self, timeout: float | None = None) -> None:
        """Wait (up to `timeout` s) for the turns queued so far to be answered."""
        if self._turns is not None:
            async with asyncio.timeout(timeout):
                await self._turns.idle(self.platform)
        if self._inflight:
            await asyncio.wait(list(self._inflight), timeout=timeout)

    async def stop(self) -> None:
        """Let running turns finish (up to `shutdown_grace` s), then close the connection."""
        if self._client is None:
            return
        self._closing = True
        if self._turns is not None:  # they still send their replies: the bot stays up
            await self._turns.detach(self, self._shutdown_grace)
        if self._inflight:
            await asyncio.wait(list(self._inflight), timeout=self._shutdown_grace)
        await self._close_client()

    async def _close_client(self) -> None:
        client, task = self._client, self._task
        self._client = self._task = None
        if client is not None:
            await client.close()
        if task is not None:
            done, _ = await asyncio.wait({task}, timeout=5)
            if not done:
                task.cancel()

    # -- sending ----------------------------------------------------------------------------

    def _destination(self, room_id: str) -> discord.PartialMessageable:
        if self._client is None:
            raise PlatformError("the Discord adapter is not started")
        return self._client.get_partial_messageable(int(room_id), type=discord.ChannelType.private)

    def room(self, msg: InboundMessage, reply_to: str | None,
             once: ReplyKey | None = None) -> ReplyOps:
        """How a turn's reply is shown in its DM (`Replier`); `once` gives the messages their
        nonces (`dm_ops`)."""
        return dm_ops(self._destination(msg.room_id), self._edit_interval, once)

    async def send(self, room_id: str, text: str) -> list[str]:
        """Send `text` to a DM channel (split at 2,000 characters); the message ids."""
        return await send_text(dm_ops(self._destination(room_id), self._edit_interval), text)

    async def _tell(self, channel: discord.abc.Messageable, text: str) -> None:
        """Best-effort short notice; a failure to deliver it is only logged."""
        try:
            await channel.send(text)
        except PLATFORM_ERRORS as exc:
            log.warning("discord: could not send a notice: %s", exc)

    # -- inbound ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _tracked(self) -> Iterator[None]:
        """Count the current callback as a running turn (`drain()` and `stop()` wait for it)."""
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            yield
        finally:
            if task is not None:
                self._inflight.discard(task)

    async def on_message(self, message: discord.Message) -> None:
        """A DM is submitted as a turn; a mention in a server is pointed to DMs."""
        client, turns = self._client, self._turns
        if self._closing or client is None or client.user is None or turns is None:
            return
        bot_id = client.user.id
        msg = mapping.to_inbound(message, bot_id=bot_id)
        if msg is None:
            if mapping.mentions_bot(message, bot_id=bot_id):
                await self._point_to_dms(message)
            return
        with self._tracked():
            intake = await turns.submit(msg)
        if intake is Intake.REFUSED and self._tell_unlisted and msg.sender_id not in self._told:
            self._told.add(msg.sender_id)
            await self._tell(message.channel, UNLISTED_TEXT)

    async def _point_to_dms(self, message: discord.Message) -> None:
        if message.channel.id in self._pointed:
            return
        self._pointed.add(message.channel.id)
        try:
            await message.reply(DM_ONLY_TEXT, mention_author=False)
        except PLATFORM_ERRORS as exc:
            log.info("discord: could not point %s to DMs: %s", message.channel.id, exc)

    # -- slash commands ---------------------------------------------------------------------

    def _slash_command(
        self, name: str, description: str
    ) -> app_commands.Command[app_commands.Group, ..., None]:
        async def callback(interaction: discord.Interaction, text: str = "") -> None:
            await self.on_slash(interaction, mapping.command_text(name, text))

        command: app_commands.Command[app_commands.Group, ..., None] = app_commands.Command(
            name=name,
            description=description,
            callback=callback,
            allowed_contexts=app_commands.AppCommandContext(dm_channel=True),
        )
        return app_commands.describe(text="what to pass to the command (optional)")(command)

    async def on_slash(self, interaction: discord.Interaction, text: str) -> None:
        """A slash command runs as the same text command; the interaction is always answered."""
        turns = self._turns
        msg = mapping.interaction_to_inbound(interaction, text)
        if msg is None or turns is None:
            await rate_limited(interaction.response.send_message(DM_ONLY_TEXT, ephemeral=True))
            return
        with self._tracked():
            # Discord wants an answer within 3 s; the command may take longer.
            await rate_limited(interaction.response.defer(thinking=True))
            # Answered at once, outside the queue: the interaction lives in this process.
            delivery = await deliver_turn(turns, msg, interaction_ops(interaction))
            if delivery.result is None and delivery.error is None:
                await rate_limited(interaction.edit_original_response(content=UNLISTED_TEXT))


def _log_gateway_end(task: asyncio.Task[None]) -> None:
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        log.error("discord: the gateway connection ended: %s", error)


def build_discord_adapter(
    settings: Settings,
    clock: Clock | None = None,
    *,
    commands: Sequence[tuple[str, str]] = (),
) -> DiscordAdapter | None:
    """The Discord adapter when a bot token is configured (STRATA_DISCORD_TOKEN), else None.

    `commands` ((name, summary) pairs) become slash commands. `clock` is not needed: Discord
    stamps every message itself.
    """
    s = settings.discord
    if not s.token:
        return None
    return DiscordAdapter(
        s.token,
        commands=commands,
        tell_unlisted=settings.access.tell_unlisted,
        edit_interval=s.edit_interval,
        sync_commands=s.sync_commands,
    )
