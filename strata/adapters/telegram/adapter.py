"""The Telegram adapter: a python-telegram-bot `Application` living inside the app's event loop.

Lifecycle: `await adapter.connect(turns)` builds the Application (with `AIORateLimiter`,
which paces requests under Telegram's flood limits), checks the token with getMe, attaches
itself to the turn scheduler (`strata.bot.scheduler`) as Telegram's replier, starts long
polling for messages and edited messages, and returns; `start(turns)` is `connect` and then
serving until `stop()` (what `strata run` runs as a task); `await adapter.stop()` stops
polling, detaches (turns in flight finish, bounded by `shutdown_grace`) and shuts the
Application down. `run_polling()` is never used: it owns the event loop.

Polling is our own getUpdates loop, not PTB's Updater: Telegram forgets an update once a later
getUpdates carries a higher offset, and the Updater sends that before the message is stored.
One process per bot token polls at a time (a second getUpdates is answered 409 Conflict): the
one holding the lease `poll:telegram:<bot id>` (`Turns.lead`), renewed before every poll;
another takes over when it has run out. Each update is mapped by `mapping.to_inbound` and
submitted (`Turns.submit`: stored and its turn queued, in one step) before the next offset
confirms it; a message Telegram delivers again is recognised and not queued twice. The
scheduler runs the turn in whichever process claims the chat and shows the reply through
`room()`: while the model works the chat shows "typing…"; in a private chat the reply
streams into one message edited at most every `edit_interval` seconds (groups get the
finished reply only: edits count against Telegram's 20-messages-a-minute group limit); the
final text is split at 4,096 characters (UTF-16 units) on paragraph/sentence boundaries.
Replies go out as HTML (`formatting.to_html`); when Telegram rejects the entities ("can't
parse entities") the same part is resent as plain text. A 429 (`RetryAfter`) becomes
`PlatformRateLimited`: a streaming edit is skipped, a send waits out `retry_after` a bounded
number of times (`strata.adapters.base`). A 5xx or a network error on a send, edit or file is
retried `SEND_RETRIES` times with doubling backoff (the answer is saved by then; showing it is
worth a few seconds). "Message is not modified" counts as done. `/export` files go out with
sendDocument. A private message from someone not on the allowlist gets one polite note (if
`tell_unlisted`); group chatter is recorded, not answered; a live location's moves are
recorded at most once per `live_location_every` seconds. Imports `strata.adapters.base`,
`strata.adapters.runtime`, `strata.adapters.telegram.*`, `strata.core` and python-telegram-bot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from telegram import Bot, ReplyParameters, Update
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, InvalidToken, NetworkError, RetryAfter, TelegramError
from telegram.ext import AIORateLimiter, Application, ApplicationBuilder

from strata.adapters.base import PlatformRateLimited
from strata.adapters.runtime import ReplyOps, send_text
from strata.adapters.telegram import mapping
from strata.adapters.telegram.formatting import to_html
from strata.core import retry
from strata.core.config import Settings
from strata.core.errors import StrataError
from strata.core.ports import Adapter, Clock, Turns
from strata.core.types import InboundMessage, Intake

log = logging.getLogger(__name__)
# Timings a benchmark reads (`--log-level info`): flood control's holds, when turns start.
timing_log = logging.getLogger(__name__ + ".timing")
# Waits shorter than this are the limiter's own bookkeeping, not flood control.
HELD_LOGGED = 0.001

MESSAGE_LIMIT = 4096
TYPING_EVERY = 4.0  # Telegram shows "typing…" for about 5 s per chat action
DEFAULT_API = "https://api.telegram.org/bot"
SEND_RETRIES = 3  # after a 5xx or a network error; then the error reaches `deliver_turn`
RETRY_CAP = 30.0  # seconds: the longest single backoff
UPDATE_ATTEMPTS = 3  # an update whose message cannot be stored is given up after this many
ALLOWED_UPDATES = [Update.MESSAGE, Update.EDITED_MESSAGE]
T = TypeVar("T")

UNLISTED = (
    "Sorry — I only talk with people on my allowlist. If you know whoever runs me, ask them to "
    "add telegram:{user_id}."
)


def utf16_len(text: str) -> int:
    """Telegram counts message length in UTF-16 code units (an emoji can count twice)."""
    return len(text.encode("utf-16-le")) // 2


def _retry_seconds(exc: RetryAfter) -> float:
    with warnings.catch_warnings():  # PTB 22 warns that the attribute's type will change
        warnings.simplefilter("ignore", DeprecationWarning)
        value: Any = exc.retry_after
    return float(value.total_seconds() if isinstance(value, timedelta) else value)


def _told_wait(exc: BaseException) -> float | None:
    return _retry_seconds(exc) if isinstance(exc, RetryAfter) else None


def _server_trouble(exc: BaseException) -> bool:
    """A 5xx or a network error (PTB's `NetworkError`; a `BadRequest` is the request's own
    fault, and a 429 is `RetryAfter`, or `PlatformRateLimited` once flood control saw it)."""
    return isinstance(exc, NetworkError) and not isinstance(exc, BadRequest)


def _backoff(base: float, *, attempts: int | None, what: str = "telegram") -> retry.RetryPolicy:
    """Telegram's retries: doubling from `base` up to `RETRY_CAP`, a 429's own wait honoured."""
    return retry.RetryPolicy(retryable=_server_trouble, what=what, attempts=attempts,
                             base=base, cap=RETRY_CAP, retry_after=_told_wait,
                             log_level=logging.WARNING)


@contextlib.asynccontextmanager
async def _flood_control() -> AsyncIterator[None]:
    """Turn Telegram's 429 into the adapters' common `PlatformRateLimited`."""
    try:
        yield
    except RetryAfter as exc:
        raise PlatformRateLimited(_retry_seconds(exc)) from exc


class _HandledRateLimitLog(logging.Filter):
    """Drops PTB's error log for a 429 the rate limiter passes on: with `max_retries=0` every
    429 is passed on by design and handled here (logged at INFO by `strata.adapters.base`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Rate limit hit after maximum of 0 retries")


def _quiet_handled_429s() -> None:
    limiter_log = logging.getLogger("telegram.ext.AIORateLimiter")
    if not any(isinstance(f, _HandledRateLimitLog) for f in limiter_log.filters):
        limiter_log.addFilter(_HandledRateLimitLog())


class TimedRateLimiter(AIORateLimiter):
    """PTB's flood-control pacing, saying how long it held each request that had to wait: the
    platform's share of a turn's time, told apart from Strata's own (bench/reliability's
    `load` case reads these lines; `--log-level info` shows them)."""

    async def process_request(self, callback: Any, args: Any, kwargs: dict[str, Any],
                              endpoint: str, data: dict[str, Any],
                              rate_limit_args: int | None) -> Any:
        queued = time.monotonic()

        async def released(*a: Any, **kw: Any) -> Any:
            held = time.monotonic() - queued
            if held >= HELD_LOGGED:
                timing_log.info("flood control held %s to chat %s for %.1f ms (until %.3f)",
                               endpoint, data.get("chat_id"), held * 1000, time.time())
            return await callback(*a, **kw)

        return await super().process_request(released, args, kwargs, endpoint, data,
                                              rate_limit_args)


def _entities_rejected(exc: BadRequest) -> bool:
    return "can't parse entities" in exc.message.lower()


def _not_modified(exc: BadRequest) -> bool:
    return "message is not modified" in exc.message.lower()


def file_url_for(base_url: str) -> str:
    """The file download URL that belongs to a Bot API `base_url` (`…/bot` → `…/file/bot`)."""
    if base_url.endswith("/bot"):
        return base_url[: -len("/bot")] + "/file/bot"
    return base_url.rstrip("/") + "/file/bot"


class _Chat:
    """Sending into one chat: HTML with a plain-text fallback, 429 → `PlatformRateLimited`."""

    def __init__(
        self, bot: Bot, chat_id: int, reply_to: int | None = None, *, retry_base: float = 1.0
    ) -> None:
        self.bot = bot
        self.chat_id = chat_id
        self.reply_to = reply_to  # in groups the first part answers the person's message
        self.retry_base = retry_base

    async def _sturdy(self, call: Callable[[], Awaitable[T]]) -> T:
        """`call` with a 429 turned into `PlatformRateLimited` and a 5xx or network error
        (PTB's `NetworkError`, which `BadRequest` is not here) retried `SEND_RETRIES` times
        with doubling backoff: the answer is already saved, so it is worth a few seconds to
        show it. A timed-out send may have arrived; a rare duplicate beats a lost answer."""
        async def once() -> T:
            async with _flood_control():
                return await call()

        return await _backoff(self.retry_base, attempts=SEND_RETRIES + 1).call(once)

    async def send(self, text: str) -> str:
        reply = None
        if self.reply_to is not None:
            reply = ReplyParameters(self.reply_to, allow_sending_without_reply=True)

        async def once() -> str:
            try:
                sent = await self.bot.send_message(
                    self.chat_id, to_html(text), parse_mode=ParseMode.HTML, reply_parameters=reply
                )
            except BadRequest as exc:
                if not _entities_rejected(exc):
                    raise
                log.info("telegram: HTML rejected (%s); sending plain text", exc.message)
                sent = await self.bot.send_message(self.chat_id, text, reply_parameters=reply)
            return str(sent.message_id)

        sent_id = await self._sturdy(once)
        self.reply_to = None
        return sent_id

    async def edit(self, message_id: str, text: str) -> None:
        await self._sturdy(lambda: self._edit_once(message_id, text))

    async def _edit_once(self, message_id: str, text: str) -> None:
        try:
            try:
                await self.bot.edit_message_text(
                    to_html(text), self.chat_id, int(message_id), parse_mode=ParseMode.HTML
                )
            except BadRequest as exc:
                if not _entities_rejected(exc):
                    raise
                await self.bot.edit_message_text(text, self.chat_id, int(message_id))
        except BadRequest as exc:
            if not _not_modified(exc):
                raise

    async def typing(self) -> None:
        async with _flood_control():
            await self.bot.send_chat_action(self.chat_id, ChatAction.TYPING)

    async def send_file(self, name: str, data: bytes) -> str:
        sent = await self._sturdy(
            lambda: self.bot.send_document(self.chat_id, document=data, filename=name))
        return str(sent.message_id)


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
        # Several processes on one bot token: how long this process's polling lease lasts
        # without renewal (another process polls once it has run out).
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
        self._poller: asyncio.Task[None] | None = None
        self._offset: int | None = None  # the next update id: all before it are stored
        self._failed_update: tuple[int, int] = (-1, 0)  # (update id, failed attempts)
        self._tasks: set[asyncio.Task[None]] = set()  # allowlist notes being sent
        self._told: set[str] = set()
        self.updates_seen = 0  # updates taken in (mapped or not, turn queued): tests and logs
        self._live_recorded: dict[tuple[str, str | None], datetime] = {}
        self._stopped = asyncio.Event()
        self._closing = False
        self.polling = False  # whether this process holds the polling lease (tests, logs)
        self._renewed_at = 0.0  # when (event loop time) the polling lease was last renewed

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
        _quiet_handled_429s()
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
        self._poller = asyncio.create_task(self._poll(app.bot), name="telegram-poll")
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
            await self._stop_polling(app.bot)
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

    def _ops(self, chat: _Chat, *, stream: bool = True) -> ReplyOps:
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

    def room(self, msg: InboundMessage, reply_to: str | None) -> ReplyOps:
        """How a turn's reply is shown in its chat (`Replier`): in a group the first part
        answers the person's message, and the finished reply only is sent (edits count
        against Telegram's 20-messages-a-minute group limit); a private chat streams."""
        chat = _Chat(self._bot(), int(msg.room_id), int(reply_to) if reply_to else None,
                     retry_base=self.retry_base)
        return self._ops(chat, stream=msg.is_private)

    async def send(self, room_id: str, text: str) -> list[str]:
        """Send `text` to chat `room_id`: split at 4,096, HTML (plain fallback), 429s retried."""
        return await send_text(
            self._ops(_Chat(self._bot(), int(room_id), retry_base=self.retry_base)), text)

    # -- inbound -----------------------------------------------------------------------------

    async def _poll(self, bot: Bot) -> None:
        """Long-poll getUpdates while this process holds the polling lease. Each update is
        submitted (its message stored, its turn queued) before the next call's offset confirms
        it to Telegram, so a crash never loses a confirmed message."""
        failures = 0
        timeout = min(self.poll_timeout, self.poll_lease / 3)  # renewed before it runs out
        while True:
            if not await self._may_poll():
                await asyncio.sleep(self.poll_lease / 3)
                continue
            try:
                updates = await bot.get_updates(
                    offset=self._offset,
                    timeout=timedelta(seconds=timeout),
                    allowed_updates=ALLOWED_UPDATES,
                )
            except TelegramError as exc:  # 429, 5xx, network, a conflicting poller: back off
                failures += 1
                await _backoff(self.retry_base, attempts=None,
                               what="telegram: getUpdates").pause(failures, exc)
                continue
            failures = 0
            for update in updates:
                if not await self._still_polling():
                    break  # another process polls now (this one stalled): it fetches these
                if not await self._receive_or_retry(update):
                    break  # not stored: fetched again from this offset after a pause
                self._offset = update.update_id + 1

    def _lease_name(self) -> str:
        bot_id = self.identity.id if self.identity is not None else 0
        return f"poll:{self.platform}:{bot_id}"

    async def _may_poll(self) -> bool:
        """Take or renew the polling lease: True when this process is the one to poll."""
        assert self._turns is not None
        try:
            held = await self._turns.lead(self._lease_name(), timedelta(seconds=self.poll_lease))
        except Exception:  # poll loop boundary: a database hiccup is retried, never fatal
            log.warning("telegram: could not renew the polling lease", exc_info=True)
            held = False
        if held:
            self._renewed_at = asyncio.get_running_loop().time()
        if held != self.polling:
            log.info("telegram: this process %s polling", "starts" if held else "stops")
            self.polling = held
        if not held:
            self._offset = None  # the poller decides what is confirmed
        return held

    async def _still_polling(self) -> bool:
        """Renew the polling lease while a long batch is being stored (every third of the
        lease), so it never runs out under a live poller; False once another process has it."""
        if asyncio.get_running_loop().time() - self._renewed_at < self.poll_lease / 3:
            return True
        return await self._may_poll()

    async def _receive_or_retry(self, update: Update) -> bool:
        """Submit one update; False when it should be fetched again (storing failed)."""
        try:
            await self._receive(update)
            return True
        except Exception:  # poll loop boundary: a failing store must not stop polling
            uid, tries = self._failed_update
            tries = tries + 1 if uid == update.update_id else 1
            self._failed_update = (update.update_id, tries)
            if tries >= UPDATE_ATTEMPTS:
                log.exception("telegram: giving up on update %d after %d attempts",
                              update.update_id, tries)
                return True
            log.warning("telegram: could not take update %d in; fetching it again",
                        update.update_id, exc_info=True)
            await asyncio.sleep(retry.doubling(tries + 1, self.retry_base, RETRY_CAP))
            return False

    async def _stop_polling(self, bot: Bot) -> None:
        """End the poll loop and confirm what was stored (else it is fetched again and, as a
        redelivery, skipped; a command would run twice)."""
        poller, self._poller = self._poller, None
        if poller is None:
            return
        poller.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poller
        if self._offset is None:
            await self._release_polling()
            return
        try:
            await bot.get_updates(offset=self._offset, timeout=timedelta(0), limit=1,
                                  allowed_updates=ALLOWED_UPDATES)
        except TelegramError as exc:
            log.info("telegram: could not confirm the last updates (%s); they are skipped as "
                     "redeliveries after a restart", exc.message)
        await self._release_polling()

    async def _release_polling(self) -> None:
        """Give the polling lease back at a clean stop, so another process polls at once."""
        if self._turns is None or not self.polling:
            return
        self.polling = False
        try:
            await self._turns.step_down(self._lease_name())
        except Exception:  # shutdown boundary: the lease then simply expires
            log.warning("telegram: could not release the polling lease", exc_info=True)

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
        ops = self._ops(_Chat(self._bot(), int(msg.room_id), retry_base=self.retry_base))
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
