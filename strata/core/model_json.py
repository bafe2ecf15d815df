"""The one reader of JSON out of a model's reply.

Model output is untrusted and small models decorate it: a ```json fence, "Sure! …" before the
object, "hope that helps" after it. `read_model_json` finds the one JSON object in the reply,
validates it with a pydantic model and returns the validated value, or None with a short
reason for the log. Each caller decides what a refusal means (retry, extractive fallback,
keep the cursor), so nothing here raises on bad input. A leaf module: `strata/memory/` and
`strata/cognition/` both import it.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
# Braces inside prose ("{name}" in an apology) could precede the real object; trying a few
# opening braces covers that without scanning a pathological reply quadratically.
_MAX_STARTS = 16


@dataclass(frozen=True, slots=True)
class ModelJson(Generic[M]):
    """The validated answer, or None and why (for the log)."""

    value: M | None
    reason: str = ""


def _object(text: str) -> dict[str, Any] | None:
    """The JSON object in `text`: the span from the first `{` to the last `}` when that
    parses, else the first object that decodes from one of the first opening braces."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        whole = json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict):
        return whole
    decoder = json.JSONDecoder()
    tries = 0
    while start >= 0 and tries < _MAX_STARTS:
        tries += 1
        try:
            found, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            found = None
        if isinstance(found, dict):
            return found
        start = text.find("{", start + 1)
    return None


def read_model_json(reply: str, model: type[M]) -> ModelJson[M]:
    """The one JSON object in `reply` (fenced, bare or wrapped in prose) validated as
    `model`; `value` is None when there is no object or it does not fit the schema."""
    text = reply.strip()
    if not text:
        return ModelJson(None, "empty reply")
    fenced = _FENCE.search(text)
    data = _object(fenced.group(1)) if fenced else None
    if data is None:
        data = _object(text)
    if data is None:
        # The reason goes to logs at WARNING, job reports and `jobs status`: it must not quote
        # the reply (which may echo a person's words, out of a forget's reach); DEBUG may.
        log.debug("no JSON object in the model's reply: %r", text[:200])
        return ModelJson(None, f"no JSON object in the reply ({len(text)} characters)")
    try:
        return ModelJson(model.model_validate(data))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "answer"
        return ModelJson(None, f"{model.__name__} {where}: {err['msg']}")
