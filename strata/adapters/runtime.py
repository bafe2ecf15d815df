"""A room's reply operations, as every platform adapter gives them (`ReplyOps`), and sending a
text not tied to a turn (`send_text`: a reminder, a scheduled prompt's answer).

An adapter describes how to talk back in one conversation in a `ReplyOps` (send, edit, typing,
optional file upload, the limit and how to measure it) and hands it to the scheduler as the
room's output (`Replier.room`, the `RoomOutput` Protocol); the scheduler shows each turn's reply
through it (`strata.bot.delivery.deliver_turn`). Imports `strata.core` only.

Example (a platform with send/edit/typing coroutines)::

    ops = ReplyOps(send=send_text, edit=edit_text, typing=show_typing, limit=4096)
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from strata.core.sending import EditFn, SendFn, Size, TypingFn, call_with_retry, split_message

SendFileFn = Callable[[str, bytes], Awaitable[str]]  # (file name, data) → message id


@dataclass
class ReplyOps:
    """How a platform talks back in one conversation."""

    send: SendFn
    limit: int
    size: Size = len
    edit: EditFn | None = None
    typing: TypingFn | None = None
    send_file: SendFileFn | None = None
    min_edit_interval: float = 1.0
    typing_every: float = 4.0
    monotonic: Callable[[], float] = field(default=time.monotonic)
    stream: bool = True  # show the reply while it is written (when `edit` is given)
    done: TypingFn | None = None  # called once the reply is shown or failed


async def send_text(ops: ReplyOps, text: str) -> list[str]:
    """Send `text` not tied to a turn (a reminder, say): split at the limit, 429s retried."""
    ids: list[str] = []
    for part in split_message(text, ops.limit, ops.size):
        msg_id = await call_with_retry(lambda p=part: ops.send(p))  # type: ignore[misc]
        if msg_id is not None:
            ids.append(msg_id)
    return ids
