"""Prompts that fit the model's context window.

Small local models have small windows (4,096 tokens is common), and a request over it is
refused (llama.cpp answers 400) or silently cut. The window comes from the config
(`llm.context_tokens`) or the endpoint (llama.cpp's `/props`); unknown, nothing is fitted.

Token counts here are the project's estimate (`strata.core.tokens`, about four characters a token),
scaled by the model's own count of a sample where the endpoint offers one
(`strata.bot.token_calibration`). A text unlike the sample (code, other scripts) can still be
undercounted, so only `SAFETY` of the window is planned for. Within it the reply keeps its
room first, then the system prompt, tool schemas, recalled memory and the message; the history
gets what is left, and when a request still does not fit, history goes before memory: the
oldest history messages are dropped, then the memory block is cut, then the message itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from strata.bot.token_calibration import TokenCalibration
from strata.core.config import Settings
from strata.core.tokens import count_tokens, truncate_to_tokens
from strata.core.types import ChatMessage, ToolSpec

# The share of the window planned for: the estimate may undercount (code, other scripts).
SAFETY = 0.8
# Per message: the chat template's role markers and separators.
MESSAGE_OVERHEAD = 8
# The reply keeps at least this much room, and at most a quarter of the window.
MIN_REPLY = 128


@dataclass(frozen=True, slots=True)
class ContextWindow:
    tokens: int
    # The model's count per estimated token, once measured (`calibrate`); None: the estimate.
    calibration: TokenCalibration | None = field(default=None, compare=False)

    @property
    def usable(self) -> int:
        """The model tokens planned for."""
        return int(self.tokens * SAFETY)

    @property
    def scale(self) -> float:
        return self.calibration.ratio if self.calibration is not None else 1.0

    async def calibrate(self) -> None:
        """Have the scale measured, where the endpoint offers it (once; then at once)."""
        if self.calibration is not None:
            await self.calibration.calibrate()

    def _estimated(self, tokens: int) -> int:
        """`tokens` of the model's in the estimate's units."""
        return int(tokens / self.scale)

    def reply_tokens(self, wanted: int) -> int:
        return max(MIN_REPLY, min(wanted, self.usable // 4))

    def history_budget(self, *, fixed: int, recall: int, reply: int, configured: int) -> int:
        """The history's share: what the reply, the fixed parts and recall's whole budget
        leave, at most the configured history budget."""
        return max(0, min(configured, self._estimated(self.usable - reply) - fixed - recall))

    def fit(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
            reply: int) -> list[ChatMessage]:
        """`messages` cut to fit with `tools` and `reply` tokens of answer: history first
        (oldest first), then the memory block, then the message."""
        out = list(messages)
        room = self._estimated(self.usable - reply) - tools_cost(tools)
        over = messages_cost(out) - room
        if over <= 0:
            return out
        # History: the user/assistant messages before the turn's own last user message (the
        # tool round's messages after it belong to this turn and stay).
        last_user = max((i for i, m in enumerate(out) if m.role == "user"), default=-1)
        i = 0
        while over > 0 and i < last_user:
            m = out[i]
            if m.role in ("user", "assistant") and not m.tool_calls:
                over -= message_cost(m)
                del out[i]
                last_user -= 1
                continue
            i += 1
        # Then the per-turn context (ambient snapshot and memory), then the other system
        # parts, then the message: each cut by what is still over.
        order = [j for j, m in enumerate(out) if m.role == "system"][::-1]
        if last_user >= 0:
            order.append(last_user)
        for j in order:
            if over <= 0:
                break
            text = out[j].content or ""
            keep = max(0, count_tokens(text) - over)
            cut = truncate_to_tokens(text, keep)
            over -= count_tokens(text) - count_tokens(cut)
            out[j] = replace(out[j], content=cut)
        return out


def message_cost(m: ChatMessage) -> int:
    calls = sum(count_tokens(c.name) + count_tokens(c.arguments) for c in m.tool_calls or ())
    return count_tokens(m.content or "") + calls + MESSAGE_OVERHEAD


def messages_cost(messages: Sequence[ChatMessage]) -> int:
    return sum(message_cost(m) for m in messages)


def tools_cost(tools: Sequence[ToolSpec]) -> int:
    return count_tokens(json.dumps([t.to_api() for t in tools])) if tools else 0


def _n_ctx(props: Any) -> int | None:
    """The window in a llama.cpp `/props` answer (per slot, as requests see it)."""
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    value = settings.get("n_ctx") if isinstance(settings, dict) else None
    return value if isinstance(value, int) and value > 0 else None


async def learn_context_tokens(base_url: str, api_key: str = "",
                               timeout: float = 2.0) -> int | None:
    """The window the endpoint reports (llama.cpp's `/props`), or None when it says none."""
    root = base_url.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        # A plain-http endpoint (a local model) needs no TLS context: loading the CA bundle
        # for one costs a start-up about 0.1 s (verify only ever applies to https).
        async with httpx.AsyncClient(timeout=timeout, verify=root.lower().startswith("https:")
                                     ) as client:
            resp = await client.get(root + "/props", headers=headers)
        if resp.status_code != 200:
            return None
        return _n_ctx(resp.json())
    except (httpx.HTTPError, ValueError):
        return None


# What a background model call's instructions, framing and answer take besides its quoted
# input (the facts prompt's instructions alone are ~700 tokens; a summary answer up to 600).
CALL_OVERHEAD = 1400


def input_budget(window: ContextWindow, configured: int) -> int:
    """A background call's quoted-input budget (compaction, roll-up, fact extraction) within
    the window: the configured one, or less when the window is smaller."""
    return max(256, min(configured, window.usable - CALL_OVERHEAD))


def fitted_settings(settings: Settings, window: ContextWindow) -> Settings:
    """`settings` with the background calls' input budgets cut to fit `window`."""
    life, facts = settings.lifecycle, settings.facts
    life = life.model_copy(update={
        "compact_input_tokens": input_budget(window, life.compact_input_tokens),
        "rollup_input_tokens": input_budget(window, life.rollup_input_tokens)})
    facts = facts.model_copy(update={"input_tokens": input_budget(window, facts.input_tokens)})
    return settings.model_copy(update={"lifecycle": life, "facts": facts})


async def model_window(settings: Settings) -> ContextWindow | None:
    """The chat model's window: configured (`llm.context_tokens`), else as the endpoint says;
    calibrated on its first `calibrate`."""
    llm = settings.llm
    tokens = llm.context_tokens or await learn_context_tokens(llm.base_url, llm.api_key)
    if not tokens:
        return None
    return ContextWindow(tokens, TokenCalibration(llm.base_url, llm.api_key, llm.timeout))
