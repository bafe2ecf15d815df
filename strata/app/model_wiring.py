"""Wiring of the model clients: the clock, the chat model and the embedder from `Settings`,
and the metered model that charges calls made after a turn to the memory owner. Part of the
composition root (`strata.app.compose`).
"""

from __future__ import annotations

from collections.abc import Callable

from strata.app.web.metrics import Metrics
from strata.bot.llm import OpenAIChatModel, OpenAIEmbedder
from strata.bot.metered_chat import MeteredChat
from strata.core.clock import FileClock, SystemClock
from strata.core.config import Settings
from strata.core.errors import ConfigError
from strata.core.ports import ChatModel, Clock
from strata.memory.coordination.jobruns import JobRunRepo

# The model for calls made after a turn, by purpose: `metered(purpose)(owner_id)` charges its
# tokens to that memory owner under that purpose (`metered_for_owner`).
OwnerModel = Callable[[int], ChatModel]
Metered = Callable[[str], OwnerModel]

def default_clock(settings: Settings) -> Clock:
    """The system clock; `bot.clock_file` (a simulation aid) makes it a shared file's time."""
    if settings.bot.clock_file:
        try:
            return FileClock(settings.bot.clock_file)
        except ValueError as exc:
            raise ConfigError(f"config key bot.clock_file (or STRATA_BOT_CLOCK_FILE): {exc}"
                              ) from exc
    return SystemClock()


def make_chat_model(settings: Settings) -> OpenAIChatModel:
    s = settings.llm
    return OpenAIChatModel(
        base_url=s.base_url,
        model=s.model,
        api_key=s.api_key,
        timeout=s.timeout,
        max_retries=s.max_retries,
        backoff=s.retry_backoff,
        max_tokens=s.max_tokens,
    )


def make_embedder(settings: Settings) -> OpenAIEmbedder:
    s = settings.embed
    return OpenAIEmbedder(
        base_url=s.base_url,
        model=s.model,
        dim=s.dim,
        api_key=s.api_key,
        timeout=s.timeout,
        max_retries=s.max_retries,
        backoff=settings.llm.retry_backoff,
        batch_size=s.batch_size,
    )


def metered_for_owner(chat: ChatModel, runs: JobRunRepo, clock: Clock,
                      purpose: str, metrics: Metrics | None = None) -> OwnerModel:
    """The model for calls made after a turn, outside any job run: each call's tokens are
    recorded for the memory owner under `purpose` (shown by `strata jobs status`)."""

    def for_owner(owner_id: int) -> ChatModel:
        async def charge(tokens: int) -> None:
            if metrics is not None:
                metrics.charge(purpose, tokens)
            await runs.record_usage(purpose, owner_id, clock.now(), tokens)

        return MeteredChat(chat, charge)

    return for_owner
