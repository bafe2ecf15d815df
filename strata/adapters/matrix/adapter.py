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
`strata.adapters.runtime.deliver_turn`'s). Several processes may sync the same account: each
submits the message and it is queued once. Rate limits: nio is told never to retry 429s itself
(`max_limit_exceeded=0`), so a 429 surfaces here as `PlatformRateLimited`: a streaming edit is
skipped, a final send waits out `retry_after` a bounded number of times, the sync loop sleeps
it out. Timeouts are retried by nio at most `max_timeouts` times per request.

End-to-end encryption: with `matrix-nio[e2e]` installed and `encryption = true`, the olm
account, device keys and megolm sessions live in `store_path` (keep it, and keep `device_id`
fixed, or every restart is a new unverified device); encrypted rooms are decrypted and answered
encrypted; devices are not verified (messages go to unverified devices too).

Imports `adapters.*`, `bot` types/ports/config/errors and nio.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from nio import (
    AsyncClient,
    AsyncClientConfig,
    InviteMemberEvent,
    JoinError,
    LoginError,
    MatrixRoom,
    MegolmEvent,
    ProfileGetDisplayNameResponse,
    RoomGetEventResponse,
    RoomSendError,
    RoomTypingError,
    SyncError,
    SyncResponse,
    UploadResponse,
    WhoamiResponse,
)
from nio.crypto import ENCRYPTION_ENABLED

from strata.adapters.base import PlatformRateLimited, call_with_retry, platform_retry_after
from strata.adapters.matrix.mapping import (
    EVENT_LIMIT,
    PLATFORM,
    BotInfo,
    RoomInfo,
    content_budget,
    content_size,
    edit_content,
    invite_allowed,
    reply_content,
    reply_target,
    to_inbound,
)
from strata.adapters.runtime import ReplyOps, send_text
from strata.core.config import AccessSettings, MatrixSettings
from strata.core.errors import ConfigError, PlatformError
from strata.core.ports import Turns
from strata.core.private_files import private_dir
from strata.core.retry import RetryPolicy
from strata.core.types import InboundMessage

log = logging.getLogger(__name__)

UNDECRYPTABLE = (
    "I couldn't decrypt that message (I don't have its key yet). If it keeps happening, "
    "check that your client shares keys with unverified devices."
)


def _retry_after(resp: Any) -> float | None:
    """Seconds to wait when `resp` is a 429 answer, else None."""
    if getattr(resp, "status_code", None) == "M_LIMIT_EXCEEDED":
        ms = getattr(resp, "retry_after_ms", None) or 1000
        return float(ms) / 1000
    return None


# The sync loop never gives up: doubling waits from 1 s to 30 s, a 429's own wait honoured.
SYNC_BACKOFF = RetryPolicy(retryable=lambda _: True, what="matrix: sync", attempts=None,
                           base=1.0, cap=30.0, retry_after=platform_retry_after,
                           log_level=logging.WARNING)


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
        self.encryption = settings.encryption and ENCRYPTION_ENABLED
        if settings.encryption and not ENCRYPTION_ENABLED:
            log.warning(
                "matrix: encryption is on but matrix-nio[e2e] is not installed; encrypted"
                " rooms cannot be read (pip install 'matrix-nio[e2e]')"
            )
        self.client: AsyncClient | None = None
        self.bot = BotInfo(settings.user, bot_name)
        self.turns: Turns | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._room_tail: dict[str, asyncio.Task[None]] = {}
        # Our own recent event ids: a reply to one of them addresses the bot in a shared room.
        self._own: OrderedDict[str, None] = OrderedDict()
        self.synced = asyncio.Event()
        self._started = time.monotonic()
        # Enough timeline per sync that a burst of messages is not cut ("limited").
        self._filter = {"room": {"timeline": {"limit": 100}}}
        #: Counters for tests and logs: messages sent, edits, 429s met, messages taken in,
        #: turns delivered.
        self.stats: Counter[str] = Counter()

    # -- lifecycle ----------------------------------------------------------------------------

    def _config(self) -> AsyncClientConfig:
        s = self.settings
        return AsyncClientConfig(
            # 429s come back to us at once (PlatformRateLimited): a streamed edit is skipped
            # instead of stalling the turn, final sends wait them out a bounded number of times.
            max_limit_exceeded=0,
            max_timeouts=s.max_timeouts,
            request_timeout=s.request_timeout,
            encryption_enabled=self.encryption,
            store_sync_tokens=self.encryption,
        )

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
        sync loop task and return."""
        s = self.settings
        self.turns = turns
        self._started = time.monotonic()
        store = Path(s.store_path).expanduser()
        private_dir(store)  # the device's encryption keys: 0700
        client = AsyncClient(
            s.homeserver, s.user, device_id=s.device_id, store_path=str(store),
            config=self._config(),
        )
        self.client = client
        try:
            await self._login(client)
            await self._initial_sync(client)
        except BaseException:
            await client.close()
            self.client = None
            raise
        turns.attach(self)  # queued turns of Matrix rooms (a crash's too) run from now on
        self._loop_task = asyncio.create_task(self._sync_loop(), name="matrix-sync")

    async def _login(self, client: AsyncClient) -> None:
        s = self.settings
        try:
            if s.access_token:
                client.restore_login(s.user, s.device_id, s.access_token)
            else:
                resp = await client.login(s.password, device_name=self.bot_name or "Strata")
                if isinstance(resp, LoginError):
                    raise PlatformError(f"matrix: login as {s.user} failed: {resp.message}")
            who = await client.whoami()
        except (TimeoutError, OSError) as exc:
            raise PlatformError(f"matrix: cannot reach {s.homeserver}: {exc}") from exc
        if not isinstance(who, WhoamiResponse):
            raise PlatformError(f"matrix: the homeserver refused the login: {who.message}")
        client.user_id = who.user_id
        self.bot = BotInfo(who.user_id, self.bot_name)
        name = await client.get_displayname()
        if isinstance(name, ProfileGetDisplayNameResponse) and name.displayname:
            self.bot = BotInfo(who.user_id, name.displayname)
        if client.should_upload_keys:
            await client.keys_upload()
        log.info("matrix: logged in as %s (device %s, encryption %s)", who.user_id,
                 client.device_id, "on" if self.encryption else "off")

    async def _initial_sync(self, client: AsyncClient) -> None:
        # Only the newest event per room: the backlog is history, not something to answer.
        resp = await client.sync(
            timeout=0, full_state=True, sync_filter={"room": {"timeline": {"limit": 1}}}
        )
        if not isinstance(resp, SyncResponse):
            raise PlatformError(f"matrix: the first sync failed: {resp.message}")
        await self._keys()
        await self._on_sync(resp, answer=False)
        self.synced.set()

    async def stop(self) -> None:
        """Stop syncing, let in-flight turns finish (at most `shutdown_grace` s), close."""
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task
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
                    wait = _retry_after(resp)
                    if wait is not None:
                        raise PlatformRateLimited(wait)
                    raise PlatformError(f"sync failed: {resp.status_code} {resp.message}")
                failures = 0
                await self._keys()
                await self._on_sync(resp, answer=True)
                self.synced.set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # adapter boundary: the loop must outlive any one sync
                failures += 1
                if failures == 1 and not isinstance(exc, PlatformRateLimited):
                    log.warning("matrix: sync failed", exc_info=True)  # the traceback once
                await SYNC_BACKOFF.pause(failures, exc)

    async def _keys(self) -> None:
        """The end-to-end housekeeping nio's `sync_forever` would do after each sync."""
        client = self.client
        if client is None or client.olm is None:
            return
        await client.send_to_device_messages()
        if client.should_upload_keys:
            await client.keys_upload()
        if client.should_query_keys:
            await client.keys_query()
        if client.should_claim_keys:
            await client.keys_claim(client.get_users_for_key_claiming())

    async def _on_sync(self, resp: SyncResponse, *, answer: bool) -> None:
        assert self.client is not None
        for room_id, info in resp.rooms.invite.items():
            try:
                await self._on_invite(room_id, info.invite_state)
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

    async def _on_invite(self, room_id: str, state: list[Any]) -> None:
        assert self.client is not None
        me = self.bot.user_id
        inviter = next(
            (
                ev.sender
                for ev in state
                if isinstance(ev, InviteMemberEvent)
                and ev.state_key == me
                and ev.membership == "invite"
            ),
            None,
        )
        if inviter is None:
            return
        if not invite_allowed(inviter, self.access):
            log.info("matrix: rejecting an invite from a user not on the allowlist")
            await self.client.room_leave(room_id)
            return
        client = self.client

        async def join() -> str | None:
            resp = await client.join(room_id)
            if isinstance(resp, JoinError):
                wait = _retry_after(resp)
                if wait is not None:
                    raise PlatformRateLimited(wait)
                log.warning("matrix: could not join %s: %s", room_id, resp.message)
                return None
            return room_id

        if await call_with_retry(join) is not None:
            log.info("matrix: joined %s on an invite", room_id)

    def room_info(self, room: MatrixRoom) -> RoomInfo:
        return RoomInfo(room.room_id, room.member_count, room.display_name, room.encrypted)

    async def _on_event(self, room: MatrixRoom, event: Any) -> None:
        if isinstance(event, MegolmEvent):
            if event.sender != self.bot.user_id and room.member_count <= 2:
                log.warning("matrix: could not decrypt an event in %s", room.room_id)
                self._enqueue(room.room_id, self._say(room.room_id, UNDECRYPTABLE))
            return
        source = getattr(event, "source", None)
        if not isinstance(source, dict) or self._from_before_start(source):
            return
        info = self.room_info(room)
        sender = source.get("sender")
        content = source.get("content")
        own = self._own
        if not info.is_private and isinstance(content, dict):
            target = reply_target(content)
            if target is not None and target not in own and await self._is_own(room, target):
                self._remember_own(target)
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

    def _from_before_start(self, source: dict[str, Any]) -> bool:
        """Was the event sent before this adapter started? (backlog: never answered)

        The initial sync already skips the backlog, but Synapse may serve a cached answer to
        it, so the event's `unsigned.age` (server-relative, immune to clock skew) decides.
        """
        unsigned = source.get("unsigned")
        age = unsigned.get("age") if isinstance(unsigned, dict) else None
        if not isinstance(age, int | float):
            return False
        # age only grows in transit, so this never mistakes a newer event for an old one.
        return age / 1000 > time.monotonic() - self._started

    async def _is_own(self, room: MatrixRoom, event_id: str) -> bool:
        """Was `event_id` (a message someone replied to) sent by the bot? Asks the server."""
        assert self.client is not None
        resp = await self.client.room_get_event(room.room_id, event_id)
        return isinstance(resp, RoomGetEventResponse) and resp.event.sender == self.bot.user_id

    def _remember_own(self, event_id: str) -> None:
        self._own[event_id] = None
        while len(self._own) > 5000:
            self._own.popitem(last=False)

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

    def _ops(self, room: RoomInfo, reply_to: str | None) -> ReplyOps:
        first = [reply_to]  # only the first message of a reply quotes the question

        async def send(text: str) -> str:
            quote, first[0] = first[0], None
            return await self._send(room.room_id, reply_content(text, in_reply_to=quote))

        async def edit(event_id: str, text: str) -> None:
            await self._send(room.room_id, edit_content(event_id, text))

        async def typing() -> None:
            await self._typing(room.room_id, True)

        async def send_file(name: str, data: bytes) -> str:
            return await self._send_file(room, name, data)

        return ReplyOps(
            send=send,
            edit=edit,
            typing=typing,
            send_file=send_file,
            limit=content_budget(room.encrypted),
            size=content_size,
            min_edit_interval=self.edit_interval,
        )

    def room(self, msg: InboundMessage, reply_to: str | None) -> ReplyOps:
        """How a turn's reply is shown in its room (`Replier`); in a shared room the first
        message quotes the person's (`reply_to`)."""
        assert self.client is not None
        known = self.client.rooms.get(msg.room_id)
        info = (self.room_info(known) if known is not None
                else RoomInfo(msg.room_id, 2 if msg.is_private else 3, msg.room_name or "", True))
        ops = self._ops(info, reply_to)

        async def done() -> None:
            self.stats["turns"] += 1
            await self._typing(info.room_id, False)

        ops.stream, ops.done = self.stream, done
        return ops

    async def _say(self, room_id: str, text: str) -> None:
        try:
            await send_text(ReplyOps(send=lambda t: self._send(room_id, reply_content(t)),
                                     limit=content_budget(True), size=content_size), text)
        except Exception:  # adapter boundary: an unsendable notice is only logged
            log.warning("matrix: could not send a notice to %s", room_id, exc_info=True)

    async def send(self, room_id: str, text: str) -> list[str]:
        """Send `text` to a room outside a turn (a reminder): split, 429s retried."""
        assert self.client is not None
        room = self.client.rooms.get(room_id)
        encrypted = room.encrypted if room is not None else True
        ops = ReplyOps(send=lambda t: self._send(room_id, reply_content(t)),
                       limit=content_budget(encrypted), size=content_size)
        return await send_text(ops, text)

    async def _send(self, room_id: str, content: dict[str, Any]) -> str:
        assert self.client is not None
        resp = await self.client.room_send(
            room_id, "m.room.message", content, ignore_unverified_devices=True
        )
        if isinstance(resp, RoomSendError):
            wait = _retry_after(resp)
            if wait is not None:
                self.stats["rate_limited"] += 1
                raise PlatformRateLimited(wait)
            raise PlatformError(f"matrix: sending to {room_id} failed: {resp.message}")
        self._remember_own(resp.event_id)
        self.stats["edits" if "m.new_content" in content else "sent"] += 1
        return str(resp.event_id)

    async def _typing(self, room_id: str, on: bool) -> None:
        assert self.client is not None
        resp = await self.client.room_typing(room_id, on, timeout=15_000)
        if isinstance(resp, RoomTypingError):
            wait = _retry_after(resp)
            if wait is not None:
                raise PlatformRateLimited(wait)

    async def _send_file(self, room: RoomInfo, name: str, data: bytes) -> str:
        assert self.client is not None
        resp, keys = await self.client.upload(
            io.BytesIO(data), content_type="application/json", filename=name,
            encrypt=room.encrypted, filesize=len(data),
        )
        if not isinstance(resp, UploadResponse):
            wait = _retry_after(resp)
            if wait is not None:
                raise PlatformRateLimited(wait)
            raise PlatformError(f"matrix: uploading {name} failed: {resp.message}")
        content: dict[str, Any] = {"msgtype": "m.file", "body": name,
                                   "info": {"size": len(data), "mimetype": "application/json"}}
        if keys is not None:
            content["file"] = {**keys, "url": resp.content_uri}
        else:
            content["url"] = resp.content_uri
        return await self._send(room.room_id, content)
