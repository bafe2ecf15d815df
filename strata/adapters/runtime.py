"""Running one inbound message through the turn handler, the same way on every platform.

A platform adapter maps its event to an `InboundMessage`, describes how to talk back in a
`ReplyOps` (send, edit, typing, optional file upload, the limit and how to measure it) and calls
`deliver_turn`. That gives every platform the same behaviour:

- the typing indicator is on while the model works (`typing_while`);
- the reply streams into one message edited at most every `min_edit_interval` seconds (when the
  platform can edit), 429s during streaming only skip an edit;
- the final reply is split at the platform limit on paragraph/sentence boundaries and sent with
  bounded retry-after handling (`StreamedReply.finish` / `call_with_retry`);
- a failed turn shows its short honest text (`TurnResult.reply`); an unexpected exception is
  logged and the person gets `SORRY`, never a traceback; a turn another process took over
  (its writes refused) shows nothing more.

`deliver_turn` is the adapter callback boundary: with `typing_while` and the console adapter's
line loop (which prints `SORRY` the same way), the one place in `strata/adapters/` allowed to catch
`Exception`. Imports `strata.adapters.base`, `strata.core.types` and `strata.core.ports`.

Example (a platform with send/edit/typing coroutines)::

    ops = ReplyOps(send=send_text, edit=edit_text, typing=show_typing, limit=4096)
    await deliver_turn(handler, inbound, ops)
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from strata.adapters.base import (
    EditFn,
    SendFn,
    Size,
    StreamedReply,
    TypingFn,
    call_with_retry,
    split_message,
    typing_while,
)
from strata.core.errors import WriteRefusedError
from strata.core.ports import RoomOutput, TurnHandler
from strata.core.types import InboundMessage, TurnResult

log = logging.getLogger(__name__)

SendFileFn = Callable[[str, bytes], Awaitable[str]]  # (file name, data) → message id

SORRY = "Sorry — something went wrong on my side while answering. Please try again in a moment."
NO_FILES = "(I can't send files here; `strata memory export` on the server gives the same data.)"


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


@dataclass
class Delivery:
    """What happened: the turn's result (None: the bot stayed silent) and the message ids sent."""

    result: TurnResult | None
    message_ids: list[str]
    error: BaseException | None = None


async def _typing_off() -> None:
    return None


async def deliver_turn(handler: TurnHandler, msg: InboundMessage, ops: RoomOutput) -> Delivery:
    """Run `msg` through `handler` and show the reply in `ops`; never raises `Exception`."""
    try:
        return await _deliver(handler, msg, ops)
    finally:
        if ops.done is not None:
            with contextlib.suppress(Exception):  # best effort: the turn is over either way
                await ops.done()


async def _deliver(handler: TurnHandler, msg: InboundMessage, ops: RoomOutput) -> Delivery:
    streamed = StreamedReply(
        send=ops.send,
        edit=ops.edit or _no_edit,
        limit=ops.limit,
        size=ops.size,
        min_interval=ops.min_edit_interval,
        monotonic=ops.monotonic,
    )
    streaming = ops.stream and ops.edit is not None

    async def on_partial(text: str) -> None:
        nonlocal streaming
        if not streaming:
            return
        try:
            await streamed.update(text)
        except Exception:  # adapter boundary: a failed preview must not lose the answer
            log.warning("%s: streaming a partial reply failed; sending it whole", msg.platform,
                        exc_info=True)
            streaming = False

    answered = False
    try:
        async with typing_while(ops.typing or _typing_off, every=ops.typing_every):
            result = await handler.handle(msg, on_partial if streaming else None)
        answered = True
        if result is None:
            return Delivery(None, list(streamed.message_ids))
        text = result.reply
        file: tuple[str, bytes] | None = result.attachment
        if file is not None and ops.send_file is None:
            text, file = f"{text}\n\n{NO_FILES}", None
        ids = await streamed.finish(text)
        if file is not None and ops.send_file is not None:
            send_file, (name, data) = ops.send_file, file
            file_id = await call_with_retry(lambda: send_file(name, data))
            if file_id is not None:
                ids.append(file_id)
        return Delivery(result, ids)
    except WriteRefusedError as exc:
        # Another process took the channel over (this one stalled past its turn lease): the
        # reply is that process's to show; this run neither stores nor says anything more.
        log.warning("%s: turn in %s taken over by another process: %s", msg.platform,
                    msg.room_id, exc)
        return Delivery(None, list(streamed.message_ids), exc)
    except Exception as exc:  # adapter callback boundary: log it, tell the person briefly
        log.exception("%s: turn for a message in %s failed", msg.platform, msg.room_id)
        try:
            # A half-written preview is replaced; parts of a finished answer are kept.
            if streamed.message_ids and ops.edit is not None and not answered:
                await ops.edit(streamed.message_ids[0], SORRY)
            else:
                streamed.message_ids.append(await ops.send(SORRY))
        except Exception:  # the platform itself is failing: nothing more to do than log
            log.warning("%s: could not tell the person about the failure", msg.platform,
                        exc_info=True)
        return Delivery(None, list(streamed.message_ids), exc)


async def _no_edit(message_id: str, text: str) -> None:
    raise RuntimeError("this platform cannot edit messages")


async def send_text(ops: ReplyOps, text: str) -> list[str]:
    """Send `text` not tied to a turn (a reminder, say): split at the limit, 429s retried."""
    ids: list[str] = []
    for part in split_message(text, ops.limit, ops.size):
        msg_id = await call_with_retry(lambda p=part: ops.send(p))  # type: ignore[misc]
        if msg_id is not None:
            ids.append(msg_id)
    return ids
