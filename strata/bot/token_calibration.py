"""The model's own token count, where the endpoint offers one, calibrating the estimate.

`strata.core.tokens` counts about four characters a token, whatever the model. A llama.cpp
server (the embedded model's too) offers `POST /tokenize`: once per process and model, a sample
text is tokenized there, and the ratio of its real count to the estimate scales the estimates
that fit a request into the model's window (`ContextWindow.scale`). It is asked on the first
fitted request, when the model is about to be asked anyway (so an embedded model still loads
only when a reply needs it), and never again: no request waits on a call per text. An
endpoint without it (404), or one that fails or answers something else, leaves the estimate
as it is, and that answer is kept too.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx

from strata.core.tokens import count_tokens

log = logging.getLogger(__name__)

# What a request is mostly made of: conversation and recalled memory, with names, dates,
# numbers and punctuation.
SAMPLE = (
    "Kim: I moved to Lisbon on 3 March 2024, and my sister Ana visits every second weekend. "
    "Strata: That sounds lovely! Did you find a flat near the river, or further up the hill? "
    "Kim: Up the hill, in Graça: 68 m², two rooms, €1,150 a month. The tram (line 28) stops "
    "right outside, which is noisy at 7:15 but handy. I still miss my old cat, Pepper.\n"
    "- [12] (preference, food) Kim is vegetarian since 2019; she likes spicy curries.\n"
    "- [31] (event, work) Started as a data engineer at a logistics firm on 2024-04-02.\n"
    "Remembered from 14 May: \"we talked about running the half marathon in October.\""
)
# A ratio outside these bounds is more likely a broken answer than a tokenizer.
LOWEST, HIGHEST = 0.5, 4.0


def _token_count(answer: Any) -> int | None:
    tokens = answer.get("tokens") if isinstance(answer, dict) else None
    return len(tokens) if isinstance(tokens, list) and tokens else None


class TokenCalibration:
    """The ratio of the model's token count to the estimate, measured once (`calibrate`)."""

    def __init__(self, base_url: str, api_key: str = "", timeout: float = 60.0) -> None:
        # The embedded model's first request waits for it to load: `timeout` is the chat
        # call's own, so measuring never gives up sooner than the call it precedes would.
        self._root = base_url.rstrip("/").removesuffix("/v1")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self._ratio: float | None = None
        self._lock = asyncio.Lock()

    @property
    def ratio(self) -> float:
        """Real tokens per estimated token: 1.0 until measured, or when not offered."""
        return self._ratio or 1.0

    async def calibrate(self) -> float:
        """Measure once (later calls return at once)."""
        if self._ratio is None:
            async with self._lock:
                if self._ratio is None:
                    self._ratio = await self._measure()
        return self._ratio

    async def _measure(self) -> float:
        count = await self._tokenize(SAMPLE)
        if count is None:
            return 1.0
        ratio = count / count_tokens(SAMPLE)
        if not LOWEST <= ratio <= HIGHEST:
            log.warning("the model's /tokenize counted %d tokens for a sample estimated at %d; "
                        "ignored, token counts stay estimates", count, count_tokens(SAMPLE))
            return 1.0
        log.info("token counts calibrated by the model's /tokenize: %.2f real tokens an "
                 "estimated one", ratio)
        return ratio

    async def _tokenize(self, text: str) -> int | None:
        """The model's token count of `text`, or None when the endpoint offers none."""
        try:
            async with httpx.AsyncClient(timeout=self._timeout,
                                         verify=self._root.lower().startswith("https:")
                                         ) as client:
                resp = await client.post(self._root + "/tokenize", json={"content": text},
                                         headers=self._headers)
            if resp.status_code != 200:
                return None
            return _token_count(resp.json())
        except (httpx.HTTPError, ValueError):
            return None
