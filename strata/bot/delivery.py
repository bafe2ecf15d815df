"""A turn's delivery: running one message's turn and showing its reply in the room, the same
way on every platform.

The scheduler (`strata.bot.scheduler`) calls `deliver_turn` for each queued turn with the room
output the platform's adapter gave (`RoomOutput`: send, edit, typing, optional file upload, the
limit and how to measure it). That gives every platform the same behaviour:

- the typing indicator is on while the model works (`typing_while`);
- the reply streams into one message edited at most every `min_edit_interval` seconds (when the
  platform can edit), 429s during streaming only skip an edit;
- the final reply is split at the platform limit on paragraph/sentence boundaries and sent with
  bounded retry-after handling (`StreamedReply.finish` / `call_with_retry`);
- a failed turn shows its short honest text (`TurnResult.reply`); an unexpected exception is
  logged and the person gets `SORRY`, never a traceback; a turn another process took over
  (its writes refused) shows nothing more.

`deliver_turn` is the turn's error boundary towards the room: with `typing_while` and the
console adapter's line loop (which prints `SORRY` the same way), the place a turn's failure
becomes a line for the person. Imports `strata.bot.reply_stream` and `strata.core`.
"""

from __future__ import annotations

import contextlib
import logging

from strata.bot.reply_stream import StreamedReply, typing_while
from strata.core.errors import WriteRefusedError
from strata.core.ports import PartialCallback, RoomOutput, TurnHandler
from strata.core.sending import call_with_retry
from strata.core.types import Delivery, InboundMessage, TurnResult

log = logging.getLogger(__name__)

SORRY = "Sorry — something went wrong on my side while answering. Please try again in a moment."
NO_FILES = "(I can't send files here; `strata memory export` on the server gives the same data.)"

__all__ = ["NO_FILES", "SORRY", "Delivery", "deliver_turn"]


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
    on_partial = _preview(streamed, msg) if ops.stream and ops.edit is not None else None
    answered = False
    try:
        async with typing_while(ops.typing or _typing_off, every=ops.typing_every):
            result = await handler.handle(msg, on_partial)
        answered = True
        if result is None:
            return Delivery(None, list(streamed.message_ids))
        return Delivery(result, await _show(result, streamed, ops))
    except WriteRefusedError as exc:
        # Another process took the channel over (this one stalled past its turn lease): the
        # reply is that process's to show; this run neither stores nor says anything more.
        log.warning("%s: turn in %s taken over by another process: %s", msg.platform,
                    msg.room_id, exc)
        return Delivery(None, list(streamed.message_ids), exc)
    except Exception as exc:  # the turn's boundary towards the room: log it, tell the person
        log.exception("%s: turn for a message in %s failed", msg.platform, msg.room_id)
        await _say_sorry(streamed, ops, msg, answered)
        return Delivery(None, list(streamed.message_ids), exc)


def _preview(streamed: StreamedReply, msg: InboundMessage) -> PartialCallback:
    """The partial-reply callback: each partial edits the preview, until an edit fails (then
    the reply is sent whole at the end)."""
    streaming = True

    async def on_partial(text: str) -> None:
        nonlocal streaming
        if not streaming:
            return
        try:
            await streamed.update(text)
        except Exception:  # a failed preview must not lose the answer
            log.warning("%s: streaming a partial reply failed; sending it whole", msg.platform,
                        exc_info=True)
            streaming = False

    return on_partial


async def _show(result: TurnResult, streamed: StreamedReply, ops: RoomOutput) -> list[str]:
    """Show the reply (and its file, where the room takes files); the message ids sent."""
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
    return ids


async def _say_sorry(streamed: StreamedReply, ops: RoomOutput, msg: InboundMessage,
                     answered: bool) -> None:
    """Tell the person the turn failed: a half-written preview is replaced, the parts of a
    finished answer are kept."""
    try:
        if streamed.message_ids and ops.edit is not None and not answered:
            await ops.edit(streamed.message_ids[0], SORRY)
        else:
            streamed.message_ids.append(await ops.send(SORRY))
    except Exception:  # the platform itself is failing: nothing more to do than log
        log.warning("%s: could not tell the person about the failure", msg.platform,
                    exc_info=True)


async def _typing_off() -> None:
    return None


async def _no_edit(message_id: str, text: str) -> None:
    raise RuntimeError("this platform cannot edit messages")
