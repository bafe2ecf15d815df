"""The Telegram adapter: a python-telegram-bot `Application` living inside the app's event loop.

Lifecycle: `await adapter.connect(turns)` builds the Application (with `AIORateLimiter`,
which paces requests under Telegram's flood limits), checks the token with getMe, attaches
itself to the turn scheduler (`strata.bot.scheduler`) as Telegram's replier, starts long
polling for messages and edited messages, and returns; `start(turns)` is `connect` and then
serving until `stop()` (what `strata run` runs as a task); `await adapter.stop()` stops
polling, detaches (turns in flight finish, bounded by `shutdown_grace`) and shuts the
Application down. `run_polling()` is never used: it owns the event loop.

Polling is `polling.Poller`: our own getUpdates loop, run by the one process holding the bot's
polling lease; each update is mapped by `mapping.to_inbound` and submitted (`Turns.submit`:
stored and its turn queued, in one step) before the next offset confirms it; a message
Telegram delivers again is recognised and not queued twice. The scheduler runs the turn in
whichever process claims the chat and shows the reply through `room()`: while the model works
the chat shows "typing…"; in a private chat the reply streams into one message edited at most
every `edit_interval` seconds (groups get the finished reply only: edits count against
Telegram's 20-messages-a-minute group limit); the final text is split at 4,096 characters
(UTF-16 units) on paragraph/sentence boundaries. Sending (HTML with a plain-text fallback,
429s and retries) is `chat.Chat`, flood control `flood`. A private message from someone not
on the allowlist gets one polite note (if `tell_unlisted`); group chatter is recorded, not
answered; a live location's moves are recorded at most once per `live_location_every`
seconds. Imports
`strata.adapters.runtime`, `strata.adapters.telegram.*`, `strata.core` and python-telegram-bot.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from telegram import Bot, Update
from telegram.error import InvalidToken, TelegramError
from telegram.ext import Application, ApplicationBuilder

from strata.adapters.runtime import ReplyOps, send_text
from strata.adapters.telegram import mapping
from strata.adapters.telegram.chat import MESSAGE_LIMIT, Chat, utf16_len
from strata.adapters.telegram.flood import TimedRateLimiter, quiet_handled_429s
from strata.adapters.telegram.polling import Poller
from strata.core.config import Settings
from strata.core.errors import StrataError
from strata.core.ports import Adapter, Clock, Turns
from strata.core.sending import PlatformRateLimited
from strata.core.types import InboundMessage, Intake, ReplyKey

log = logging.getLogger(__name__)

TYPING_EVERY = 4.0  # Telegram shows "typing…" for about 5 s per chat action
DEFAULT_API = "https://api.telegram.org/bot"

UNLISTED = (
    "Sorry — I only talk with people on my allowlist. If you know whoever runs me, ask them to "
    "add telegram:{user_id}."
)


def file_url_for(base_url: str) -> str:
    """The file download URL that belongs to a Bot API `base_url` (`…/bot` → `…/file/bot`)."""
    if base_url.endswith("/bot"):
        return base_url[: -len("/bot")] + "/file/bot"
    return base_url.rstrip("/") + "/file/bot"


class TelegramAdapter:
    platform = mapping.PLATFORM
    message_limit = MESSAGE_LIMIT

    def __init__(
        self,
        token: str,
        *,
        base_url: str = "",
        base_file_url: str = "",
        tell_unlisted: bool = True,
        edit_interval: float = 1.0,
        poll_timeout: float = 10.0,
        shutdown_grace: float = 10.0,
        live_location_every: float = 300.0,
        commands: Sequence[tuple[str, str]] = (),
        typing_every: float = TYPING_EVERY,
        retry_base: float = 1.0,
        poll_lease: float = 30.0,
    ) -> None:
        self.token = token
        self.poll_lease = poll_lease
        self.retry_base = retry_base  # the first backoff after a 5xx; doubles each retry
        self.base_url = base_url or DEFAULT_API
        self.base_file_url = base_file_url or file_url_for(self.base_url)
        self.tell_unlisted = tell_unlisted
        self.edit_interval = edit_interval
        self.typing_every = typing_every
        self.poll_timeout = poll_timeout
        self.shutdown_grace = shutdown_grace
        self.live_location_every = timedelta(seconds=live_location_every)
        self.commands = [
            (name, summary[:256]) for name, summary in commands
            if re.fullmatch(r"[a-z0-9_]{1,32}", name) and summary
        ]
        self.identity: mapping.BotIdentity | None = None
        self._app: Application[Any, Any, Any, Any, Any, Any] | None = None
        self._turns: Turns | None = None
        self._poller: Poller | None = None
        self._tasks: set[asyncio.Task[None]] = set()  # allowlist notes being sent
        self._told: set[str] = set()
        self.updates_seen = 0  # updates taken in (mapped or not, turn queued): tests and logs
        self._live_recorded: dict[tuple[str, str | None], datetime] = {}
        self._stopped = asyncio.Event()
        self._closing = False

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, turns: Turns) -> None:
        """Connect, then serve until `stop()` (the app runs this as a task)."""
        await self.connect(turns)
        await self._stopped.wait()

    async def connect(self, turns: Turns) -> None:
        """Check the token (getMe), start polling inside the running loop, and return."""
        if self._app is not None:
            raise StrataError("the Telegram adapter is already started")
        builder: Any = (  # Any: the builder's generic type changes with .rate_limiter()
            ApplicationBuilder()
            .token(self.token)
            .base_url(self.base_url)
            .base_file_url(self.base_file_url)
            .rate_limiter(TimedRateLimiter(max_retries=0))  # 429s are ours to handle (see top)
            .updater(None)  # we poll ourselves: PTB's Updater confirms before we store
        )
        app = builder.build()
        quiet_handled_429s()
        try:
            await app.initialize()
        except InvalidToken as exc:
            raise StrataError("telegram: the bot token was refused (check STRATA_TELEGRAM_TOKEN)"
                              ) from exc
        except TelegramError as exc:
            raise StrataError(f"telegram: cannot reach the Bot API: {exc.message}") from exc
        me = app.bot.bot
        self.identity = mapping.BotIdentity(id=me.id, username=me.username or "")
        self._turns = turns
        self._app = app
        self._stopped.clear()
        await app.start()
        turns.attach(self)  # queued turns of Telegram chats (a crash's too) run from now on
        self._poller = Poller(turns, self._lease_name(), self._receive,
                              poll_timeout=self.poll_timeout, poll_lease=self.poll_lease,
                              retry_base=self.retry_base)
        self._poller.start(app.bot)
        await self._publish_commands(app.bot)
        log.info("telegram: polling as @%s", self.identity.username)

    async def _publish_commands(self, bot: Bot) -> None:
        """Show the chat commands in Telegram's "/" menu (nice to have: a failure is logged)."""
        if not self.commands:
            return
        try:
            await bot.set_my_commands(self.commands)
        except TelegramError as exc:
            log.warning("telegram: could not publish the command menu: %s", exc.message)

    async def stop(self) -> None:
        """Stop polling, let turns in flight finish (bounded), shut the Application down."""
        app = self._app
        if app is None or self._closing:
            self._stopped.set()
            return
        self._closing = True
        try:
            if self._poller is not None:
                await self._poller.stop(app.bot)
            if self._turns is not None:  # they still send their replies: the bot stays up
                await self._turns.detach(self, self.shutdown_grace)
            if self._tasks:
                await asyncio.wait(set(self._tasks), timeout=self.shutdown_grace)
            if app.running:
                await app.stop()
            await app.shutdown()
        finally:
            self._app = None
            self._closing = False
            self._stopped.set()

    async def drain(self) -> None:
        """Wait until every turn queued so far has been answered (tests, shutdown)."""
        if self._turns is not None:
            await self._turns.idle(self.platform)
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    # -- outbound ----------------------------------------------------------------------------

    def _bot(self) -> Bot:
        if self._app is None:
            raise StrataError("the Telegram adapter is not started")
        return self._app.bot

    def _ops(self, chat: Chat, *, stream: bool = True) -> ReplyOps:
        return ReplyOps(
            send=chat.send,
            edit=chat.edit,
            typing=chat.typing,
            send_file=chat.send_file,
            limit=MESSAGE_LIMIT,
            size=utf16_len,
            min_edit_interval=self.edit_interval,
            typing_every=self.typing_every,
            stream=stream,
        )

    def room(self, msg: InboundMessage, reply_to: str | None,
             once: ReplyKey | None = None) -> ReplyOps:
        """How a turn's reply is shown in its chat (`Replier`): in a group the first part
        answers the person's message, and the finished reply only is sent (edits count
        against Telegram's 20-messages-a-minute group limit); a private chat streams.
        `once` is unused: the Bot API has no client key that dedupes a send, so a turn re-run
        after a crash between sending and dequeuing shows its reply again."""
        chat = Chat(self._bot(), int(msg.room_id), int(reply_to) if reply_to else None,
                     retry_base=self.retry_base)
        return self._ops(chat, stream=msg.is_private)

    async def send(self, room_id: str, text: str) -> list[str]:
        """Send `text` to chat `room_id`: split at 4,096, HTML (plain fallback), 429s retried."""
        return await send_text(
            self._ops(Chat(self._bot(), int(room_id), retry_base=self.retry_base)), text)

    # -- inbound -----------------------------------------------------------------------------

    def _lease_name(self) -> str:
        bot_id = self.identity.id if self.identity is not None else 0
        return f"poll:{self.platform}:{bot_id}"

    @property
    def polling(self) -> bool:
        """Whether this process holds the polling lease (tests, logs)."""
        return self._poller is not None and self._poller.polling

    async def _receive(self, update: Update) -> None:
        """Map one update and submit its message (stored, its turn queued)."""
        try:
            if self.identity is None or self._turns is None:
                return
            msg = mapping.to_inbound(update, self.identity)
            if msg is None or self._too_soon(msg):
                return
            message = update.effective_message
            reply_to = message.message_id if message is not None and not msg.is_private else None
            intake = await self._turns.submit(msg, None if reply_to is None else str(reply_to))
            if intake is Intake.REFUSED and msg.addressed_to_bot:
                task = asyncio.create_task(self._silence(msg), name="telegram-unlisted")
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        finally:
            self.updates_seen += 1  # counted once its turn is queued (tests wait on this)

    def _too_soon(self, msg: InboundMessage) -> bool:
        """A live location moves every few seconds for hours: record one move per
        `live_location_every` (by Telegram's edit time) so the transcript is not flooded."""
        if msg.location is None or not msg.location.live:
            return False
        key = (msg.room_id, msg.edited_of or msg.message_id)
        last = self._live_recorded.get(key)
        if last is not None and msg.edited_of and msg.ts - last < self.live_location_every:
            return True
        self._live_recorded[key] = msg.ts
        return False

    async def _silence(self, msg: InboundMessage) -> None:
        # A private message is always addressed, so silence means "not on the allowlist".
        if not (msg.is_private and self.tell_unlisted) or msg.sender_id in self._told:
            return
        self._told.add(msg.sender_id)
        ops = self._ops(Chat(self._bot(), int(msg.room_id), retry_base=self.retry_base))
        try:
            await send_text(ops, UNLISTED.format(user_id=msg.sender_id))
        except (TelegramError, PlatformRateLimited) as exc:
            log.info("telegram: could not tell %s they are not on the allowlist: %s",
                     msg.sender_id, exc)


def build_telegram_adapter(
    settings: Settings,
    clock: Clock | None = None,
    *,
    commands: Sequence[tuple[str, str]] = (),
) -> Adapter | None:
    """The Telegram adapter when a bot token is configured (STRATA_TELEGRAM_TOKEN), else None.

    `commands` are the chat commands' (name, summary) pairs, shown in Telegram's "/" menu.
    `clock` is not needed (Telegram dates every message); it keeps the adapter-factory shape.
    """
    s = settings.telegram
    if not s.token:
        return None
    return TelegramAdapter(
        s.token,
        base_url=s.base_url,
        tell_unlisted=settings.access.tell_unlisted,
        edit_interval=s.edit_interval,
        live_location_every=s.live_location_minutes * 60,
        commands=commands,
        poll_lease=s.poll_lease_seconds,
    )
