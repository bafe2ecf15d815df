"""The Telegram adapter: a python-telegram-bot `Application` living inside the app's event loop.

Lifecycle: `await adapter.connect(handler)` builds the Application (with `AIORateLimiter`,
which paces requests under Telegram's flood limits), checks the token with getMe, queues the
turns of private messages a crash left stored but unanswered (`Inbox.unanswered`, at most
`recover_within` old), starts long polling for messages and edited messages, and returns;
`start(handler)` is `connect` and then serving until `stop()` (what `strata run` runs as a
task); `await adapter.stop()` stops polling,
lets turns in flight finish (bounded by `shutdown_grace`) and shuts the Application down.
`run_polling()` is never used: it owns the event loop.

Polling is our own getUpdates loop, not PTB's Updater: Telegram forgets an update once a later
getUpdates carries a higher offset, and the Updater sends that before the message is stored.
Here each update is mapped by `mapping.to_inbound` and taken in by `Inbox.accept` (access
control, command detection, the user row stored) before the next offset confirms it; a
message Telegram delivers again (stored, not yet confirmed at a crash) is recognised and
skipped. Its turn (`Inbox.answer`) is a task; tasks of one chat run one after the other in
arrival order, chats run concurrently. While the model works the chat shows
"typing…"; in a private chat the reply streams into one message edited at most every
`edit_interval` seconds (groups get the finished reply only: edits count against Telegram's
20-messages-a-minute group limit); the final text is split at 4,096 characters (UTF-16 units)
on paragraph/sentence boundaries. Replies go out as HTML (`formatting.to_html`); when Telegram
rejects the entities ("can't parse entities") the same part is resent as plain text. A 429
(`RetryAfter`) becomes `PlatformRateLimited`: a streaming edit is skipped, a send waits out
`retry_after` a bounded number of times (`strata.adapters.base`). A 5xx or a network error on a
send, edit or file is retried `SEND_RETRIES` times with doubling backoff (the answer is saved by
then; showing it is worth a few seconds). "Message is not modified" counts as done. `/export` files
go out with sendDocument. A private message from someone not on the
allowlist gets one polite note (if `tell_unlisted`); group chatter is recorded, not answered;
a live location's moves are recorded at most once per `live_location_every` seconds.

Typing, streaming, splitting, sending the file and the callback boundary (an unexpected error
is logged and the person gets a short `SORRY`, never a traceback) are `strata.adapters.runtime`'s
`deliver_turn`, shared with the other platforms. Imports `strata.adapters.base`,
`strata.adapters.runtime`,
`strata.adapters.telegram.*`, `bot` config, errors, ports and types, and python-telegram-bot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from telegram import Bot, ReplyParameters, Update
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, InvalidToken, NetworkError, RetryAfter, TelegramError
from telegram.ext import AIORateLimiter, Application, ApplicationBuilder

from strata.adapters.base import PlatformRateLimited
from strata.adapters.runtime import ReplyOps, deliver_turn, send_text
from strata.adapters.telegram import mapping
from strata.adapters.telegram.formatting import to_html
from strata.core import retry
from strata.core.config import Settings
from strata.core.errors import StrataError
from strata.core.ports import Adapter, Clock, Inbox, PartialCallback, SharedInbox, TurnHandler
from strata.core.types import Accepted, InboundMessage, QueuedAnswer, TurnResult

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
        recover_within: float = 3600.0,
        poll_lease: float = 30.0,
        max_turns: int = 32,
        queue_every: float = 0.5,
    ) -> None:
        self.token = token
        # With a shared inbox (several processes on one database): how long this process's
        # polling lease lasts without renewal, how many chats it answers at once, and how
        # often it looks for turns other processes queued.
        self.poll_lease = poll_lease
        self.max_turns = max_turns
        self.queue_every = queue_every
        self.retry_base = retry_base  # the first backoff after a 5xx; doubles each retry
        # A message stored but unanswered (a crash) is answered after a restart when it is
        # at most this old; an older one stays in the transcript unanswered.
        self.recover_within = timedelta(seconds=recover_within)
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
        self._inbox: Inbox | None = None
        self._poller: asyncio.Task[None] | None = None
        self._offset: int | None = None  # the next update id: all before it are stored
        self._failed_update: tuple[int, int] = (-1, 0)  # (update id, failed attempts)
        self._tasks: set[asyncio.Task[None]] = set()
        self._chat_locks: dict[str, asyncio.Lock] = {}
        self._told: set[str] = set()
        self.updates_seen = 0  # updates taken in (mapped or not, turn queued): tests and logs
        self._live_recorded: dict[tuple[str, str | None], datetime] = {}
        self._stopped = asyncio.Event()
        self._closing = False
        self._shared: SharedInbox | None = None
        self._worker: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._serving: set[int] = set()  # channels this process is answering now
        self._busy_until: dict[int, float] = {}  # channels another process had, until when
        self.polling = False  # whether this process holds the polling lease (tests, logs)
        self._renewed_at = 0.0  # when (event loop time) the polling lease was last renewed

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, handler: TurnHandler) -> None:
        """Connect, then serve until `stop()` (the app runs this as a task)."""
        await self.connect(handler)
        await self._stopped.wait()

    async def connect(self, handler: TurnHandler) -> None:
        """Check the token (getMe), start polling inside the running loop, and return."""
        if self._app is not None:
            raise StrataError("the Telegram adapter is already started")
        if not isinstance(handler, Inbox):
            raise StrataError("telegram: the turn handler must store messages on receipt")
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
        self._inbox = handler
        self._shared = handler if isinstance(handler, SharedInbox) else None
        self._app = app
        self._stopped.clear()
        await app.start()
        if self._shared is not None:
            # The database's turn queue keeps what a crash left: any process answers it.
            self._worker = asyncio.create_task(self._serve_queue(self._shared),
                                               name="telegram-turns")
        else:
            # What a crash left stored but unanswered goes first, before anything new arrives.
            since = datetime.now(UTC) - self.recover_within
            for accepted in await handler.unanswered(self.platform, since):
                log.info("telegram: answering a message stored before a restart in %s",
                         accepted.msg.room_id)
                self._start_turn(accepted, None)
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
            worker, self._worker = self._worker, None
            if worker is not None:
                worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await worker
            if self._tasks:  # they still send their replies, so the bot stays up meanwhile
                _, pending = await asyncio.wait(set(self._tasks), timeout=self.shutdown_grace)
                for task in pending:
                    task.cancel()
                if pending:
                    await asyncio.wait(pending)
            if app.running:
                await app.stop()
            await app.shutdown()
        finally:
            self._app = None
            self._closing = False
            self._stopped.set()

    async def drain(self) -> None:
        """Wait until every turn started so far has been answered (tests, shutdown)."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    # -- outbound ----------------------------------------------------------------------------

    def _bot(self) -> Bot:
        if self._app is None:
            raise StrataError("the Telegram adapter is not started")
        return self._app.bot

    def _ops(self, chat: _Chat, *, answer: bool = True) -> ReplyOps:
        """How to talk back in `chat`; with `answer=False` nothing is shown (not even SORRY)."""
        if not answer:
            return ReplyOps(send=_shown_nowhere, limit=MESSAGE_LIMIT, size=utf16_len)
        return ReplyOps(
            send=chat.send,
            edit=chat.edit,
            typing=chat.typing,
            send_file=chat.send_file,
            limit=MESSAGE_LIMIT,
            size=utf16_len,
            min_edit_interval=self.edit_interval,
            typing_every=self.typing_every,
        )

    async def send(self, room_id: str, text: str) -> list[str]:
        """Send `text` to chat `room_id`: split at 4,096, HTML (plain fallback), 429s retried."""
        return await send_text(
            self._ops(_Chat(self._bot(), int(room_id), retry_base=self.retry_base)), text)

    # -- inbound -----------------------------------------------------------------------------

    async def _poll(self, bot: Bot) -> None:
        """Long-poll getUpdates. Each update is accepted (its message stored) before the next
        call's offset confirms it to Telegram, so a crash never loses a confirmed message."""
        failures = 0
        timeout = self.poll_timeout
        if self._shared is not None:
            timeout = min(timeout, self.poll_lease / 3)  # renewed before the lease runs out
        while True:
            if self._shared is not None and not await self._may_poll(self._shared):
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
                if self._shared is not None and not await self._still_polling(self._shared):
                    break  # another process polls now (this one stalled): it fetches these
                if not await self._take(update):
                    break  # not stored: fetched again from this offset after a pause
                self._offset = update.update_id + 1

    def _lease_name(self) -> str:
        bot_id = self.identity.id if self.identity is not None else 0
        return f"poll:{self.platform}:{bot_id}"

    async def _may_poll(self, inbox: SharedInbox) -> bool:
        """Take or renew the polling lease: True when this process is the one to poll."""
        try:
            held = await inbox.hold(self._lease_name(), timedelta(seconds=self.poll_lease))
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

    async def _still_polling(self, inbox: SharedInbox) -> bool:
        """Renew the polling lease while a long batch is being stored (every third of the
        lease), so it never runs out under a live poller; False once another process has it."""
        if asyncio.get_running_loop().time() - self._renewed_at < self.poll_lease / 3:
            return True
        return await self._may_poll(inbox)

    async def _take(self, update: Update) -> bool:
        """Accept one update; False when it should be fetched again (storing failed)."""
        try:
            await self._on_update(update)
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
        if self._shared is None or not self.polling:
            return
        self.polling = False
        try:
            await self._shared.release(self._lease_name())
        except Exception:  # shutdown boundary: the lease then simply expires
            log.warning("telegram: could not release the polling lease", exc_info=True)

    async def _on_update(self, update: Update) -> None:
        """Map one update, store its message (`accept`) and queue its turn."""
        try:
            await self._take_in(update)
        finally:
            self.updates_seen += 1  # counted once its turn is queued (tests wait on this)

    async def _take_in(self, update: Update) -> None:
        if self.identity is None or self._inbox is None:
            return
        msg = mapping.to_inbound(update, self.identity)
        if msg is None or self._too_soon(msg):
            return
        message = update.effective_message
        if self._shared is not None:
            reply_to = message.message_id if message is not None and not msg.is_private else None
            if await self._shared.take_in(msg, None if reply_to is None else str(reply_to)):
                self._wake.set()
            elif msg.addressed_to_bot and not self._shared.allowed(msg):
                self._track(asyncio.create_task(self._silence(msg), name="telegram-unlisted"))
            return
        accepted = await self._inbox.accept(msg)
        if accepted is None:
            if msg.addressed_to_bot and not self._inbox.allowed(msg):
                self._track(asyncio.create_task(self._silence(msg), name="telegram-unlisted"))
            return
        reply_to = message.message_id if message is not None and not msg.is_private else None
        self._start_turn(accepted, reply_to)

    def _start_turn(self, accepted: Accepted, reply_to: int | None) -> None:
        task = asyncio.create_task(self._turn(accepted, reply_to),
                                   name=f"telegram-{accepted.msg.room_id}")
        self._track(task)

    def _track(self, task: asyncio.Task[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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

    async def _turn(self, accepted: Accepted, reply_to: int | None) -> None:
        # Tasks start in creation order and take the chat's (FIFO) lock first thing, so the
        # turns of one chat run in arrival order.
        assert self._inbox is not None
        msg = accepted.msg
        lock = self._chat_locks.setdefault(msg.room_id, asyncio.Lock())
        async with lock:
            chat = _Chat(self._bot(), int(msg.room_id), reply_to, retry_base=self.retry_base)
            # Not addressed (group chatter, an edit, a live-location move): recorded, not shown.
            ops = self._ops(chat, answer=msg.addressed_to_bot)
            # Groups get the finished reply: edits count against the 20-a-minute group limit.
            await deliver_turn(_Answer(self._inbox, accepted), msg, ops, stream=msg.is_private)

    # -- the shared turn queue (several processes) -------------------------------------------

    async def _serve_queue(self, inbox: SharedInbox) -> None:
        """Answer the queued turns of this platform's chats, whichever process took them in:
        up to `max_turns` chats at once, each claimed from the database (a chat another
        process is answering is left to it and looked at again a little later)."""
        loop = asyncio.get_running_loop()
        while True:
            self._wake.clear()
            try:
                channels = await inbox.queued_channels(self.platform, 4 * self.max_turns)
            except Exception:  # worker loop boundary: a database hiccup is retried
                log.warning("telegram: could not read the turn queue", exc_info=True)
                channels = []
            now = loop.time()
            for channel_id in channels:
                if len(self._serving) >= self.max_turns or self._closing:
                    break
                if channel_id in self._serving or self._busy_until.get(channel_id, 0) > now:
                    continue
                self._serving.add(channel_id)
                self._track(asyncio.create_task(self._serve_channel(inbox, channel_id),
                                                name=f"telegram-channel-{channel_id}"))
            # `asyncio.timeout`, not `wait_for`: on Python 3.11 a cancel (the adapter
            # stopping) that lands while `wait_for` cancels its inner task on a timeout can be
            # lost, and the loop then waits for ever: `strata run` hung on SIGTERM.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.queue_every):
                    await self._wake.wait()

    async def _serve_channel(self, inbox: SharedInbox, channel_id: int) -> None:
        try:
            async with inbox.claim(channel_id) as answers:
                if answers is None:  # another process has this chat now
                    self._busy_until[channel_id] = (asyncio.get_running_loop().time()
                                                    + 2 * self.queue_every)
                    return
                self._busy_until.pop(channel_id, None)
                for answer in answers:
                    if self._closing:
                        break  # stays queued: answered after the restart or by another process
                    await self._answer_queued(inbox, answer)
                    await inbox.done(answer)
        except Exception:  # task boundary: the chat's turns stay queued and are tried again
            log.exception("telegram: answering queued turns of channel %d failed", channel_id)
        finally:
            self._serving.discard(channel_id)
            self._wake.set()

    async def _answer_queued(self, inbox: SharedInbox, answer: QueuedAnswer) -> None:
        msg = answer.accepted.msg
        # When a turn leaves the queue (the `max_turns` chats answered at once were full): the
        # reliability suite's `load` case tells this wait from Strata's own work.
        timing_log.info("turn for chat %s starts (at %.3f)", msg.room_id, time.time())
        reply_to = int(answer.reply_to) if answer.reply_to else None
        chat = _Chat(self._bot(), int(msg.room_id), reply_to, retry_base=self.retry_base)
        ops = self._ops(chat, answer=msg.addressed_to_bot)
        await deliver_turn(_Answer(inbox, answer.accepted), msg, ops, stream=msg.is_private)

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


class _Answer:
    """`deliver_turn`'s handler for a message already accepted: its turn answers that row."""

    def __init__(self, inbox: Inbox, accepted: Accepted) -> None:
        self.inbox = inbox
        self.accepted = accepted

    async def handle(
        self, msg: InboundMessage, on_partial: PartialCallback | None = None
    ) -> TurnResult | None:
        return await self.inbox.answer(self.accepted, on_partial)


async def _shown_nowhere(text: str) -> str:
    return ""


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
        max_turns=s.max_turns,
    )
