"""The Matrix adapter (matrix-nio): login, a sync loop inside the app's event loop, auto-join,
and replies with HTML, streamed by `m.replace` edits, split at the 65,536-byte event limit.

Lifecycle: `await adapter.start(turns)` logs in (password or access token, with the
configured device id and the persistent store at `store_path`), runs one initial sync whose
timeline is *not* answered (old messages are history, not questions), then starts the sync loop
as a task in the running loop and returns; `await adapter.stop()` lets in-flight turns finish
(bounded) and closes the client. There is no second event loop and no `sync_forever` thread.

Each message is submitted to the turn scheduler (`strata.bot.scheduler`: stored and its turn
queued, in sync order) and answered by whichever process on the database claims the room; the
reply is shown through `room()` (typing, streaming, splitting and the error boundary are
`strata.bot.delivery.deliver_turn`'s). Several processes may sync the same account: each
submits the message and it is queued once. Rate limits: nio is told never to retry 429s itself
(`max_limit_exceeded=0`), so a 429 surfaces here as `PlatformRateLimited`: a streaming edit is
skipped, a final send waits out `retry_after` a bounded number of times, the sync loop sleeps
it out; a 5xx, or a timeout after nio's `max_timeouts` retries of a request, is retried like
a 429 from `send_retry_base` seconds doubling (`outbox`: one txnId per message). Sending is
`outbox.Outbox`; invites, the sync backoff and the end-to-end housekeeping are in `syncing`;
the client and its login in `login`.

End-to-end encryption: with `matrix-nio[e2e]` installed and `encryption = true`, the olm
account, device keys and megolm sessions live in `store_path` (keep it, and keep `device_id`
fixed, or every restart is a new unverified device); encrypted rooms are decrypted and answered
encrypted; devices are not verified (messages go to unverified devices too).

Imports `strata.adapters.*`, `strata.core` and nio.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Coroutine
from typing import Any

from nio import (
    AsyncClient,
    MatrixRoom,
    MegolmEvent,
    RoomGetEventResponse,
    SyncError,
    SyncResponse,
)

from strata.adapters.matrix.login import encryption_on, log_in, new_client
from strata.adapters.matrix.mapping import (
    EVENT_LIMIT,
    PLATFORM,
    BotInfo,
    RoomInfo,
    reply_target,
    to_inbound,
)
from strata.adapters.matrix.outbox import Outbox, retry_after
from strata.adapters.matrix.syncing import (
    SYNC_BACKOFF,
    answer_invite,
    e2e_housekeeping,
    from_before_start,
)
from strata.adapters.runtime import ReplyOps
from strata.core.config import AccessSettings, MatrixSettings
from strata.core.errors import ConfigError, PlatformError
from strata.core.ports import Turns
from strata.core.sending import PlatformRateLimited
from strata.core.tasks import cancel_and_wait
from strata.core.types import InboundMessage, ReplyKey

log = logging.getLogger(__name__)

UNDECRYPTABLE = (
    "I couldn't decrypt that message (I don't have its key yet). If it keeps happening, "
    "check that your client shares keys with unverified devices."
)


class MatrixAdapter:
    platform = PLATFORM
    message_limit = EVENT_LIMIT

    def __init__(
        self,
        settings: MatrixSettings,
        *,
        access: AccessSettings | None = None,
        bot_name: str = "",
        stream: bool = True,
        poll_timeout_ms: int = 30_000,
        edit_interval: float = 1.0,
        shutdown_grace: float = 10.0,
        send_retry_base: float = 1.0,
    ) -> None:
        if not settings.homeserver or not settings.user:
            raise ConfigError("matrix.homeserver and matrix.user must both be set")
        if not settings.password and not settings.access_token:
            raise ConfigError("matrix.password or matrix.access_token must be set")
        self.settings = settings
        self.access = access or AccessSettings()
        self.bot_name = bot_name
        self.stream = stream
        self.poll_timeout_ms = poll_timeout_ms
        self.edit_interval = edit_interval
        self.shutdown_grace = shutdown_grace
        self.encryption = encryption_on(settings)
        self.client: AsyncClient | None = None
        self.bot = BotInfo(settings.user, bot_name)
        self.turns: Turns | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._room_tail: dict[str, asyncio.Task[None]] = {}
        self.synced = asyncio.Event()
        self._started = time.monotonic()
        # Enough timeline per sync that a burst of messages is not cut ("limited").
        self._filter = {"room": {"timeline": {"limit": 100}}}
        #: Counters for tests and logs: messages sent, edits, 429s met, messages taken in,
        #: turns delivered.
        self.stats: Counter[str] = Counter()
        self.outbox = Outbox(self._connected, self.stats, edit_interval, send_retry_base)

    def _connected(self) -> AsyncClient:
        assert self.client is not None
        return self.client

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self, turns: Turns) -> None:
        """Connect, then serve until `stop()` (as `App.serve` expects of every adapter)."""
        await self.connect(turns)
        task = self._loop_task
        if task is not None:
            await asyncio.wait([task])  # returns when stop() cancels it, without raising
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]

    async def connect(self, turns: Turns) -> None:
        """Log in, do the initial sync (joining pending invites, answering nothing), start the
        sync loop task and return (the client and the login: `login`)."""
        self.turns = turns
        self._started = time.monotonic()
        client = new_client(self.settings, self.encryption)
        self.client = client
        try:
            self.bot = await log_in(client, self.settings, self.bot_name, self.encryption)
            await self._initial_sync(client)
        except BaseException:
            await client.close()
            self.client = None
            raise
        turns.attach(self)  # queued turns of Matrix rooms (a crash's too) run from now on
        self._loop_task = asyncio.create_task(self._sync_loop(), name="matrix-sync")

    async def _initial_sync(self, client: AsyncClient) -> None:
        # Only the newest event per room: the backlog is history, not something to answer.
        resp = await client.sync(
            timeout=0, full_state=True, sync_filter={"room": {"timeline": {"limit": 1}}}
        )
        if not isinstance(resp, SyncResponse):
            raise PlatformError(f"matrix: the first sync failed: {resp.message}")
        await e2e_housekeeping(self.client)
        await self._on_sync(resp, answer=False)
        self.synced.set()

    async def stop(self) -> None:
        """Stop syncing, let in-flight turns finish (at most `shutdown_grace` s), close."""
        if self._loop_task is not None:
            await cancel_and_wait(self._loop_task)
            self._loop_task = None
        if self.turns is not None:
            await self.turns.detach(self, self.shutdown_grace)
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=self.shutdown_grace)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
        if self.client is not None:
            await self.client.close()
            self.client = None

    # -- syncing -------------------------------------------------------------------------------

    async def _sync_loop(self) -> None:
        failures = 0
        while True:
            try:
                assert self.client is not None
                resp = await self.client.sync(
                    timeout=self.poll_timeout_ms, sync_filter=self._filter
                )
                if isinstance(resp, SyncError):
                    wait = retry_after(resp)
                    if wait is not None:
                        raise PlatformRateLimited(wait)
                    raise PlatformError(f"sync failed: {resp.status_code} {resp.message}")
                failures = 0
                await e2e_housekeeping(self.client)
                await self._on_sync(resp, answer=True)
                self.synced.set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # adapter boundary: the loop must outlive any one sync
                failures += 1
                if failures == 1 and not isinstance(exc, PlatformRateLimited):
                    log.warning("matrix: sync failed", exc_info=True)  # the traceback once
                await SYNC_BACKOFF.pause(failures, exc)

    async def _on_sync(self, resp: SyncResponse, *, answer: bool) -> None:
        assert self.client is not None
        for room_id, info in resp.rooms.invite.items():
            try:
                await answer_invite(self.client, room_id, info.invite_state, self.bot.user_id,
                                    self.access)
            except Exception:  # adapter callback boundary: one bad invite must not stop others
                log.exception("matrix: handling the invite to %s failed", room_id)
        if not answer:
            skipped = sum(len(info.timeline.events) for info in resp.rooms.join.values())
            log.debug("matrix: initial sync: %d backlog events not answered", skipped)
            return
        for room_id, info in resp.rooms.join.items():
            room = self.client.rooms.get(room_id)
            if room is None:
                continue
            for event in info.timeline.events:
                try:
                    await self._on_event(room, event)
                except Exception:  # adapter callback boundary: the next event still counts
                    log.exception("matrix: handling an event in %s failed", room_id)

    def room_info(self, room: MatrixRoom) -> RoomInfo:
        return RoomInfo(room.room_id, room.member_count, room.display_name, room.encrypted)

    async def _on_event(self, room: MatrixRoom, event: Any) -> None:
        if isinstance(event, MegolmEvent):
            if event.sender != self.bot.user_id and room.member_count <= 2:
                log.warning("matrix: could not decrypt an event in %s", room.room_id)
                self._enqueue(room.room_id, self.outbox.say(room.room_id, UNDECRYPTABLE))
            return
        source = getattr(event, "source", None)
        if not isinstance(source, dict) or from_before_start(source, self._started):
            return
        info = self.room_info(room)
        sender = source.get("sender")
        content = source.get("content")
        own = self.outbox.own
        if not info.is_private and isinstance(content, dict):
            target = reply_target(content)
            if target is not None and target not in own and await self._is_own(room, target):
                self.outbox.remember_own(target)
        msg = to_inbound(
            source,
            info,
            self.bot,
            sender_name=(room.user_name(sender) or sender) if isinstance(sender, str) else "",
            bot_event_ids=own,
        )
        if msg is not None:
            assert self.turns is not None
            # In sync order, so the room's turns are queued in the order they were sent.
            await self.turns.submit(msg, None if info.is_private else msg.message_id)
            self.stats["messages"] += 1

    async def _is_own(self, room: MatrixRoom, event_id: str) -> bool:
        """Was `event_id` (a message someone replied to) sent by the bot? Asks the server."""
        assert self.client is not None
        resp = await self.client.room_get_event(room.room_id, event_id)
        return isinstance(resp, RoomGetEventResponse) and resp.event.sender == self.bot.user_id

    def _enqueue(self, room_id: str, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` after the room's earlier work (one turn at a time per room, in order)."""
        before = self._room_tail.get(room_id)

        async def run() -> None:
            if before is not None:
                await asyncio.wait([before])
            await work

        task = asyncio.create_task(run())
        self._tasks.add(task)
        self._room_tail[room_id] = task

        def done(t: asyncio.Task[None]) -> None:
            self._tasks.discard(t)
            if self._room_tail.get(room_id) is t:
                del self._room_tail[room_id]

        task.add_done_callback(done)

    async def idle(self) -> None:
        """Wait until every turn queued so far is answered (for tests and shutdown)."""
        if self.turns is not None:
            await self.turns.idle(self.platform)
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    # -- talking back --------------------------------------------------------------------------

    def room(self, msg: InboundMessage, reply_to: str | None,
             once: ReplyKey | None = None) -> ReplyOps:
        """How a turn's reply is shown in its room (`Replier`); in a shared room the first
        message quotes the person's (`reply_to`)."""
        assert self.client is not None
        known = self.client.rooms.get(msg.room_id)
        info = (self.room_info(known) if known is not None
                else RoomInfo(msg.room_id, 2 if msg.is_private else 3, msg.room_name or "", True))
        ops = self.outbox.ops(info, reply_to, once)

        async def done() -> None:
            self.stats["turns"] += 1
            await self.outbox.typing(info.room_id, False)

        ops.stream, ops.done = self.stream, done
        return ops

    async def send(self, room_id: str, text: str) -> list[str]:
        """Send `text` to a room outside a turn (a reminder): split, 429s retried."""
        assert self.client is not None
        room = self.client.rooms.get(room_id)
        encrypted = room.encrypted if room is not None else True
        return await self.outbox.send_text(room_id, text, encrypted=encrypted)
