"""Protocols at the seams: chat model, embedder, clock, reply sink, adapter. A leaf module.

Anything behind a port can be swapped (a fake server's client in tests, another provider in
production) without touching the code that uses it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from strata.core.types import (
    Channel,
    ChatMessage,
    Completion,
    InboundMessage,
    Intake,
    Person,
    ReplyKey,
    ToolSpec,
    TurnResult,
)


class Clock(Protocol):
    def now(self) -> datetime: ...


class ChatModel(Protocol):
    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        max_tokens: int | None = None,
        schema: type[BaseModel] | None = None,
    ) -> Completion: ...

    def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[str | Completion]:
        """Yield text deltas, then the final `Completion` (with any tool calls) last."""
        ...


# One L2-normalised float32 embedding, shape (dim,).
Vector = npt.NDArray[np.float32]


class Embedder(Protocol):
    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[Vector | None]:
        """Return one L2-normalised float32 vector per text, or None where the model gave no
        usable vector (wrong length, NaN/inf, all zero): that text is kept without one."""
        ...


# Receives the cumulative reply text while the model streams; the adapter decides how often
# to show it (message edits are throttled per platform).
PartialCallback = Callable[[str], Awaitable[None]]


@runtime_checkable
class TurnHandler(Protocol):
    """What an adapter hands each inbound message to (the turn processor, via the app)."""

    async def handle(
        self, msg: InboundMessage, on_partial: PartialCallback | None = None
    ) -> TurnResult | None: ...


class RoomOutput(Protocol):
    """How to talk back in one room: what an adapter gives the scheduler for a turn's reply
    (shown through it by `strata.bot.delivery.deliver_turn`).

    `send` returns the platform message id; `edit` (None: the platform cannot) replaces a
    message's text; `typing` shows the typing indicator once (every `typing_every` s while
    the turn runs); `done` (optional) is called once the reply is shown or failed (Matrix ends
    its typing indicator there); `send_file` uploads (name, data).
    `limit` is the longest message as measured by `size`; `stream` says whether the reply is
    shown while the model writes it (edits at most every `min_edit_interval` s).
    """

    @property
    def send(self) -> Callable[[str], Awaitable[str]]: ...
    @property
    def edit(self) -> Callable[[str, str], Awaitable[None]] | None: ...
    @property
    def typing(self) -> Callable[[], Awaitable[None]] | None: ...
    @property
    def done(self) -> Callable[[], Awaitable[None]] | None: ...
    @property
    def send_file(self) -> Callable[[str, bytes], Awaitable[str]] | None: ...
    @property
    def limit(self) -> int: ...
    @property
    def size(self) -> Callable[[str], int]: ...
    @property
    def stream(self) -> bool: ...
    @property
    def min_edit_interval(self) -> float: ...
    @property
    def typing_every(self) -> float: ...
    @property
    def monotonic(self) -> Callable[[], float]: ...


class Replier(Protocol):
    """A platform's reply side: the output for the room a queued turn came from. `once`
    identifies the queued turn's reply (None outside the queue): a platform that dedupes sends
    by a client key shows it once even when the turn runs again after a crash."""

    platform: str

    def room(self, msg: InboundMessage, reply_to: str | None,
             once: ReplyKey | None = None) -> RoomOutput: ...


@runtime_checkable
class Resumes(Protocol):
    """Answers the turns a killed process left queued for one room, through `replier`
    (`strata.bot.scheduler.TurnScheduler.resume`): the console calls it when it starts."""

    async def resume(self, replier: Replier, room_id: str) -> int: ...


class Turns(Protocol):
    """What every adapter is started with (`strata.bot.scheduler.TurnScheduler`): it submits
    each inbound message, attaches itself as its platform's replier once connected and detaches
    before it disconnects. `lead` is for a platform that lets one process at a time fetch
    (Telegram's getUpdates): True while this process is the one. `handle` runs a turn at once,
    outside the queue, for a reply the platform wants now (a Discord slash command)."""

    async def submit(self, msg: InboundMessage, reply_to: str | None = None) -> Intake: ...

    def attach(self, replier: Replier) -> None: ...

    async def detach(self, replier: Replier, grace: float) -> None: ...

    async def lead(self, name: str, ttl: timedelta) -> bool: ...

    async def step_down(self, name: str) -> None: ...

    async def idle(self, platform: str) -> None: ...

    async def handle(
        self, msg: InboundMessage, on_partial: PartialCallback | None = None
    ) -> TurnResult | None: ...


class Adapter(Protocol):
    """A platform adapter: lives inside the app's event loop. `start` connects, serves until
    `stop()` and gives every inbound message to `turns`."""

    platform: str
    message_limit: int

    async def start(self, turns: Turns) -> None: ...

    async def stop(self) -> None: ...

    async def send(self, room_id: str, text: str) -> list[str]:
        """Send `text` (split at the platform limit); return the platform message ids."""
        ...


class Recaller(Protocol):
    """Turn-zero recall: a quoted memory block for `query`, or None when nothing is relevant."""

    async def recall(
        self, *, channel: Channel, person: Person, query: str,
        shown_from_row_id: int | None = None,
    ) -> str | None:
        """`shown_from_row_id`: the channel's rows from this id on are already in the prompt
        (history and the message itself), so recalling them would only repeat them."""
        ...


class ContextSource(Protocol):
    """Adds a per-turn section to the prompt (ambient snapshot, portrait, …)."""

    async def portrait(self, owner_id: int, *, facts: bool = True) -> str | None:
        """Who the owner is, for the prompt: the synthesised portrait and, with `facts`, the
        durable facts it stands on."""
        ...

    async def ambient(self, person: Person, channel: Channel) -> str | None: ...


class AfterTurn(Protocol):
    """Work done after the reply is sent, off the hot path (episode cut, compaction check)."""

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None: ...
