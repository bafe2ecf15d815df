"""Talking back in Matrix rooms (`Outbox`): messages, `m.replace` edits, typing and files.

Each call is tried once: nio is told never to retry 429s itself, so a 429 answer surfaces here
as `PlatformRateLimited` (`retry_after` reads its wait), and a 5xx, or a timeout nio gave up
on, as `PlatformUnavailable` with a doubling backoff; `call_with_retry`
(`strata.core.sending`) retries both, the one retry layer of a send. Every message of a reply
has its txnId fixed before its first try (`strata.adapters.once`: from the queued turn, `ops`'s
`once`, else a key of this reply's own), and every try sends it again, so Synapse answers a
repeat with the event it made first: a retried message is shown once. Every event the bot
sends is remembered (`own`, the newest 5,000): a reply to one of them addresses the bot in a
shared room. Imports `strata.adapters.*`, `strata.core` and nio.
"""

from __future__ import annotations

import io
import logging
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any, NoReturn

from aiohttp import ClientConnectionError
from nio import AsyncClient, ErrorResponse, RoomSendError, RoomTypingError, UploadResponse

from strata.adapters.matrix.mapping import (
    RoomInfo,
    content_budget,
    content_size,
    edit_content,
    reply_content,
)
from strata.adapters.once import keyed_send, send_key
from strata.adapters.runtime import ReplyOps, send_text
from strata.core.errors import PlatformError
from strata.core.retry import doubling
from strata.core.sending import PlatformRateLimited, PlatformUnavailable
from strata.core.types import ReplyKey

log = logging.getLogger(__name__)
RETRY_CAP = 30.0  # seconds: the longest backoff after a 5xx or a timeout

OWN_REMEMBERED = 5000  # the bot's own event ids kept to recognise replies to it


def retry_after(resp: Any) -> float | None:
    """Seconds to wait when `resp` is a 429 answer, else None."""
    if getattr(resp, "status_code", None) == "M_LIMIT_EXCEEDED":
        ms = getattr(resp, "retry_after_ms", None) or 1000
        return float(ms) / 1000
    return None


def own_key() -> ReplyKey:
    """Keys for a reply that is not a queued turn's: fixed for this reply only."""
    return ReplyKey(uuid.uuid4().hex, retry=False)


class Outbox:
    """Sends through the adapter's logged-in client (`client()`), counting into `stats`."""

    def __init__(self, client: Callable[[], AsyncClient], stats: Counter[str],
                 edit_interval: float, retry_base: float = 1.0) -> None:
        self.client = client
        self.stats = stats
        self.edit_interval = edit_interval
        self.retry_base = retry_base  # seconds: the first backoff after a 5xx or a timeout
        self._failures = 0  # 5xx answers and timeouts in a row, for the backoff
        # Our own recent event ids: a reply to one of them addresses the bot in a shared room.
        self.own: OrderedDict[str, None] = OrderedDict()

    def remember_own(self, event_id: str) -> None:
        self.own[event_id] = None
        while len(self.own) > OWN_REMEMBERED:
            self.own.popitem(last=False)

    def ops(self, room: RoomInfo, reply_to: str | None, once: ReplyKey | None = None) -> ReplyOps:
        """A turn's reply in `room`; with `once`, each message's txnId comes from the queued
        turn (`strata.adapters.once`), so a re-run after a crash gets the same events back;
        without it from a key of this reply's own, so a retried message is still shown once."""
        quoted = False
        key = once or own_key()

        async def send_keyed(text: str, txn: str | None) -> str:
            # Only the first message quotes the question: the one with no message before it.
            nonlocal quoted
            quote = None if quoted else reply_to
            event_id = await self.send(room.room_id, reply_content(text, in_reply_to=quote), txn)
            quoted = True
            return event_id

        async def edit(event_id: str, text: str) -> None:
            await self.send(room.room_id, edit_content(event_id, text))

        send = keyed_send(send_keyed, edit, key)

        async def typing() -> None:
            await self.typing(room.room_id, True)

        async def send_file(name: str, data: bytes) -> str:
            # One txnId for every try of this file (each uploads it again).
            return await self.send_file(room, name, data, send_key(f"{key.key}:{name}", 0))

        return ReplyOps(
            send=send,
            edit=edit,
            typing=typing,
            send_file=send_file,
            limit=content_budget(room.encrypted),
            size=content_size,
            min_edit_interval=self.edit_interval,
        )

    async def send_text(self, room_id: str, text: str, *, encrypted: bool) -> list[str]:
        """`text` as plain replies to nobody, split to fit the room's event limit."""
        async def send_keyed(part: str, txn: str | None) -> str:
            return await self.send(room_id, reply_content(part), txn)

        ops = ReplyOps(send=keyed_send(send_keyed, None, own_key()),
                       limit=content_budget(encrypted), size=content_size)
        return await send_text(ops, text)

    async def say(self, room_id: str, text: str) -> None:
        """A best-effort notice: one that cannot be sent is only logged."""
        try:
            await self.send_text(room_id, text, encrypted=True)
        except Exception:  # adapter boundary: an unsendable notice is only logged
            log.warning("matrix: could not send a notice to %s", room_id, exc_info=True)

    async def send(self, room_id: str, content: dict[str, Any], txn: str | None = None) -> str:
        """One event, tried once (`call_with_retry` tries it again); a repeated `txn` (same
        device) returns the event it sent first."""
        try:
            resp = await self.client().room_send(
                room_id, "m.room.message", content, tx_id=txn, ignore_unverified_devices=True
            )
        except (ClientConnectionError, TimeoutError) as exc:  # nio's max_timeouts are spent
            raise self._unavailable(f"matrix: sending to {room_id}: {exc!r}") from exc
        if isinstance(resp, RoomSendError):
            self._refused(resp, f"matrix: sending to {room_id} failed")
        self._failures = 0
        self.remember_own(resp.event_id)
        self.stats["edits" if "m.new_content" in content else "sent"] += 1
        return str(resp.event_id)

    def _unavailable(self, reason: str) -> PlatformUnavailable:
        self._failures += 1
        return PlatformUnavailable(doubling(self._failures, self.retry_base, RETRY_CAP), reason)

    def _refused(self, resp: ErrorResponse, what: str) -> NoReturn:
        """`resp` as the error `call_with_retry` understands: a 429 or a 5xx is retried."""
        wait = retry_after(resp)
        if wait is not None:
            self.stats["rate_limited"] += 1
            raise PlatformRateLimited(wait)
        status = getattr(resp.transport_response, "status", 0)
        if status >= 500:
            raise self._unavailable(f"{what}: {status} {resp.message}")
        raise PlatformError(f"{what}: {resp.message}")

    async def typing(self, room_id: str, on: bool) -> None:
        resp = await self.client().room_typing(room_id, on, timeout=15_000)
        if isinstance(resp, RoomTypingError):
            wait = retry_after(resp)
            if wait is not None:
                raise PlatformRateLimited(wait)

    async def send_file(self, room: RoomInfo, name: str, data: bytes,
                        txn: str | None = None) -> str:
        try:
            resp, keys = await self.client().upload(
                io.BytesIO(data), content_type="application/json", filename=name,
                encrypt=room.encrypted, filesize=len(data),
            )
        except (ClientConnectionError, TimeoutError) as exc:  # nio's max_timeouts are spent
            raise self._unavailable(f"matrix: uploading {name}: {exc!r}") from exc
        if not isinstance(resp, UploadResponse):
            self._refused(resp, f"matrix: uploading {name} failed")
        content: dict[str, Any] = {"msgtype": "m.file", "body": name,
                                   "info": {"size": len(data), "mimetype": "application/json"}}
        if keys is not None:
            content["file"] = {**keys, "url": resp.content_uri}
        else:
            content["url"] = resp.content_uri
        return await self.send(room.room_id, content, txn)
