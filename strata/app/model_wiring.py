"""Wiring of the model clients: the clock, the chat model and the embedder from `Settings`.
Part of the composition root (`strata.app.compose`).
"""

from __future__ import annotations

from strata.bot.llm import OpenAIChatModel, OpenAIEmbedder
from strata.core.clock import FileClock, SystemClock
from strata.core.config import Settings
from strata.core.errors import ConfigError
from strata.core.ports import Clock


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
