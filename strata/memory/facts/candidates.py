"""Fact candidates as the model proposes them (untrusted): the answer's shape (`FactsSchema`,
requested as its JSON schema), its lenient reading (`parse_answer`: one bad item does not cost
the others) and the excerpts a batch shows (`Excerpt`). The prompt is cognition's
(`strata.bot.writers.prompts.facts`); every candidate is checked before it is stored
(`strata.memory.facts.routing`). Imports no model.

The contract with the model (tested as text): every candidate carries `modality` and
`asserted_by_person`, and quotes the person's own words in `evidence`, so code can drop
mentions, quotes, questions and hypotheticals even when the model lists them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from strata.core.errors import ModelBadResponseError
from strata.core.model_json import read_model_json

log = logging.getLogger(__name__)

Modality = Literal["assertion", "quote", "question", "hypothetical", "mention"]


class Candidate(BaseModel):
    """One fact as the model proposed it (untrusted)."""

    kind: str
    text: str = Field(min_length=1, max_length=500)
    subject: str = "self"
    attribute: str = ""
    modality: Modality
    asserted_by_person: bool
    durable: bool = True
    correction: bool = False
    replaces: list[int] = []
    evidence: str = ""
    episode: int | None = None
    confidence: float = Field(default=0.7, ge=0.0, le=1.0)

    @field_validator("text", "evidence", "subject", "attribute")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()


class FactsAnswer(BaseModel):
    """The answer's shape; each item is validated as a `Candidate` on its own, so one bad
    item does not cost the others."""

    facts: list[Any]


class FactsSchema(BaseModel):
    """The shape the model is asked for (`response_format`): a list of whole candidates.
    Parsing stays lenient (`FactsAnswer`) so that one bad item does not cost the others."""

    facts: list[Candidate]


@dataclass(frozen=True, slots=True)
class Excerpt:
    """One episode as the model sees it: its summary and the lines it cites."""

    episode_id: int
    date: str
    summary: str
    lines: tuple[tuple[str, str], ...]  # (speaker: "person" / "assistant", text)


def parse_answer(text: str) -> list[Candidate]:
    """The candidates in the model's answer; malformed items are dropped one by one.

    An answer that is not a JSON object with a `facts` list at all raises
    `ModelBadResponseError` (the extractor then keeps its cursor and tries again later).
    """
    answer = read_model_json(text, FactsAnswer)
    if answer.value is None:
        raise ModelBadResponseError(
            f'fact extraction: the answer is not {{"facts": [...]}} ({answer.reason})')
    out = []
    for item in answer.value.facts:
        try:
            out.append(Candidate.model_validate(item))
        except ValidationError as exc:
            log.info("dropping a malformed fact candidate: %s", exc.errors()[0]["msg"])
    return out
