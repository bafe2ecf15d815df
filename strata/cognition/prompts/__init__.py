"""Prompts of the background jobs, one module per model task, and the shared JSON reader.

Model output is untrusted: `read_json` reads it with the project's one reader
(`strata.core.model_json`); an answer that does not fit is a `ModelBadResponseError`, so the job run
is recorded as failed and its cursor stays where it was (the work is retried at the next check).
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from strata.core.errors import ModelBadResponseError
from strata.core.model_json import read_model_json

M = TypeVar("M", bound=BaseModel)


def read_json(reply: str, model: type[M]) -> M:
    """The JSON object in `reply` validated as `model`, else `ModelBadResponseError`."""
    read = read_model_json(reply, model)
    if read.value is None:
        raise ModelBadResponseError(f"the model's JSON did not fit: {read.reason}")
    return read.value


def quoted(text: str) -> str:
    """Untrusted text as a quoted block (data, not instructions)."""
    return "\n".join("> " + line for line in text.strip().splitlines()) or "> (empty)"
