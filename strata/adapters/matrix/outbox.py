"""Talking back in Matrix rooms (`Outbox`): messages, `m.replace` edits, typing and files.

nio is told never to retry 429s itself, so a 429 answer surfaces here as
`PlatformRateLimited` (`retry_after` reads its wait): a streaming edit is skipped, a final send
waits it out a bounded number of times (`strata.adapters.runtime`). Every event the bot sends is
remembered (`own`, the newest 5,000): a reply to one of them addresses the bot in a shared room.
A queued turn's messages carry txnIds derived from the turn (`ops`, `strata.adapters.once`).
Imports `strata.adapters.*` and nio.
"""

from __future__ import annotations

import asyncio
import io
import logging
import uuid
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from nio import AsyncClient, RoomSendError, RoomTypingError, UploadResponse

from strata.adapters.matrix.mapping import (
    RoomInfo,
    content_budget,
    content_size,
    edit_content,
    reply_content,
)
from strata.adapters.once import keyed_send
from strata.adapters.runtime import ReplyOps, send_text
from strata.core.errors import PlatformError
from strata.core.sending import PlatformRateLimited
from strata.core.types import ReplyKey

log = logging.getLogger(__name__)
# The waits before a failed send (with a txnId) is tried again.
SEND_RETRY_WAITS = (0.5, 1.5)

OWN_REMEMBERED = 5000  # the bot's own event ids kept to recognise replies to it


def retry_after(resp: Any) -> float | None:
    """Seconds to wait when `resp` is a 429 answer, else None."""
    if getattr(resp, "status_code", None) == "M_LIMIT_EXCEEDED":
        ms = getattr(resp, "retry_after_ms", None) or 1000
        return float(ms) / 1000
    return None


class Outbox:
    """Sends through the adapter's logged-in client (`client()`), counting into `stats`."""

    def __init__(self, client: Callable[[], AsyncClient], stats: Counter[str],
                 edit_interval: float) -> None:
        self.client = client
        self.stats = stats
        self.edit_interval = edit_interval
        # Our own recent event ids: a reply to one of them addresses the bot in a shared room.
        self.own: OrderedDict[str, None] = OrderedDict()

    def remember_own(self, event_id: str) -> None:
        self.own[event_id] = None
        while len(self.own) > OWN_REMEMBERED:
            self.own.popitem(last=False)

    def ops(self, room: RoomInfo, reply_to: str | None, once: ReplyKey | None = None) -> ReplyOps:
        """A turn's reply in `room`; with `once`, each message's txnId comes from the queued
        turn (`strata.adapters.once`), so a re-run after a crash gets the same events back."""
        quoted = False

        async def send_keyed(text: str, txn: str | None) -> str:
            # Only the first message quotes the question: the one with no message before it.
            nonlocal quoted
            quote = None if quoted else reply_to
            # A txnId of our own even when the turn gives none: a send retried after a 5xx
            # (`send`) then cannot show the message twice.
            event_id = await self.send(room.room_id, reply_content(text, in_reply_to=quote),
                                       txn or uuid.uuid4().hex)
            quoted = True
            return event_id

        async def edit(event_id: str, text: str) -> None:
            await self.send(room.room_id, edit_content(event_id, text))

        send = keyed_send(send_keyed, edit, once)

        async def typing() -> None:
            await self.typing(room.room_id, True)

        async def send_file(name: str, data: bytes) -> str:
            return await self.send_file(room, name, data)

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
        ops = ReplyOps(send=lambda t: self.send(room_id, reply_content(t)),
                       limit=content_budget(encrypted), size=content_size)
        return await send_text(ops, text)

    async def say(self, room_id: str, text: str) -> None:
        """A best-effort notice: one that cannot be sent is only logged."""
        try:
            await self.send_text(room_id, text, encrypted=True)
        except Exception:  # adapter boundary: an unsendable notice is only logged
            log.warning("matrix: could not send a notice to %s", room_id, exc_info=True)

    async def send(self, room_id: str, content: dict[str, Any], txn: str | None = None) -> str:
        """One event; a repeated `txn` (same device) returns the event it sent first, so a send
        with a `txn` that failed other than by a rate limit (a 502 from a proxy) is tried again,
        after each of `SEND_RETRY_WAITS`: a reply's only message is not lost to one bad answer."""
        for wait in (*SEND_RETRY_WAITS, None):
            resp = await self.client().room_send(
                room_id, "m.room.message", content, tx_id=txn, ignore_unverified_devices=True
            )
            if (not isinstance(resp, RoomSendError) or txn is None or wait is None
                    or retry_after(resp) is not None):
                break
            log.warning("matrix: sending to %s failed (%s); trying again in %.1f s", room_id,
                        resp.message, wait)
            await asyncio.sleep(wait)
        if isinstance(resp, RoomSendError):
            wait = retry_after(resp)
            if wait is not None:
                self.stats["rate_limited"] += 1
                raise PlatformRateLimited(wait)
            raise PlatformError(f"matrix: sending to {room_id} failed: {resp.message}")
        self.remember_own(resp.event_id)
        self.stats["edits" if "m.new_content" in content else "sent"] += 1
        return str(resp.event_id)

    async def typing(self, room_id: str, on: bool) -> None:
        resp = await self.client().room_typing(room_id, on, timeout=15_000)
        if isinstance(resp, RoomTypingError):
            wait = retry_after(resp)
            if wait is not None:
                raise PlatformRateLimited(wait)

    async def send_file(self, room: RoomInfo, name: str, data: bytes) -> str:
        resp, keys = await self.client().upload(
            io.BytesIO(data), content_type="application/json", filename=name,
            encrypt=room.encrypted, filesize=len(data),
        )
        if not isinstance(resp, UploadResponse):
            wait = retry_after(resp)
            if wait is not None:
                raise PlatformRateLimited(wait)
            raise PlatformError(f"matrix: uploading {name} failed: {resp.message}")
        content: dict[str, Any] = {"msgtype": "m.file", "body": name,
                                   "info": {"size": len(data), "mimetype": "application/json"}}
        if keys is not None:
            content["file"] = {**keys, "url": resp.content_uri}
        else:
            content["url"] = resp.content_uri
        return await self.send(room.room_id, content)
