"""Prompts of the background jobs, one module per model task, and the shared JSON reader.

Model output is untrusted: `read_json` finds the JSON object in a reply and validates it with
a pydantic model; anything else is a `ModelBadResponseError`, so the job run is recorded as
failed and its cursor stays where it was (the work is retried at the next check).
"""

from __future__ import annotations

import json
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from bot.errors import ModelBadResponseError

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def read_json(reply: str, model: type[M]) -> M:
    """The first JSON object in `reply` (fenced or bare), validated as `model`."""
    text = reply.strip()
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ModelBadResponseError(f"expected a JSON object, got {reply[:80]!r}")
    try:
        return model.model_validate(json.loads(text[start : end + 1]))
    except (json.JSONDecodeError, ValidationError) as exc:
        raise ModelBadResponseError(f"the model's JSON did not fit: {str(exc)[:200]}") from None


def quoted(text: str) -> str:
    """Untrusted text as a quoted block (data, not instructions)."""
    return "\n".join("> " + line for line in text.strip().splitlines()) or "> (empty)"
