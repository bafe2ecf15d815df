"""Protocols at the seams: chat model, embedder, clock, reply sink, adapter. A leaf module.

Anything behind a port can be swapped (a fake server's client in tests, another provider in
production) without touching the code that uses it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from strata.core.types import (
    Accepted,
    Channel,
    ChatMessage,
    Completion,
    InboundMessage,
    Person,
    QueuedAnswer,
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


@runtime_checkable
class Inbox(TurnHandler, Protocol):
    """A turn handler that stores a message when it arrives and answers it in its chat's turn,
    for platforms that confirm a message as soon as it is fetched (Telegram's getUpdates):
    `accept` is durable before the adapter confirms, `answer` runs later in arrival order,
    `unanswered` gives back what a crash left stored but unanswered."""

    def allowed(self, msg: InboundMessage) -> bool: ...

    async def accept(self, msg: InboundMessage) -> Accepted | None: ...

    async def answer(
        self, accepted: Accepted, on_partial: PartialCallback | None = None
    ) -> TurnResult | None: ...

    async def unanswered(self, platform: str, since: datetime) -> list[Accepted]: ...


@runtime_checkable
class SharedInbox(Inbox, Protocol):
    """An inbox shared by several processes on one database (`strata.bot.shared_inbox`): one process
    polls a platform account (holding the lease `hold` names) and takes messages in
    (`take_in`: stored and queued, durable); every process claims channels with queued turns
    (`claim`, never waiting: None while another has the channel) and answers them, each
    `done` once its reply is shown."""

    async def hold(self, name: str, ttl: timedelta) -> bool: ...

    async def release(self, name: str) -> None: ...

    async def take_in(self, msg: InboundMessage, reply_to: str | None = None) -> bool: ...

    async def queued_channels(self, platform: str, limit: int = 100) -> list[int]: ...

    def claim(
        self, channel_id: int
    ) -> AbstractAsyncContextManager[list[QueuedAnswer] | None]: ...

    async def done(self, answer: QueuedAnswer) -> None: ...


class Adapter(Protocol):
    """A platform adapter: lives inside the app's event loop."""

    platform: str
    message_limit: int

    async def start(self, handler: TurnHandler) -> None: ...

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
