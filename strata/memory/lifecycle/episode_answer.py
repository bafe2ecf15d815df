"""The episode summary as the model must answer it (`EpisodeSummary`, requested as its JSON
schema) and its validation: `parse()` raises `ValueError` on anything unusable, so the writer
can ask once more and then fall back to an extractive episode. The prompt that asks for it is
the writers' (`strata.bot.writers.prompts.episode_summary`). Imports no model.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from strata.core.model_json import read_model_json
from strata.memory.rules.text import is_markup

MAX_SUMMARY_CHARS = 1200


class Emotion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    label: str = Field(default="neutral", max_length=40)
    intensity: float = Field(default=0.0, ge=0.0, le=1.0)


class EpisodeSummary(BaseModel):
    """The validated answer."""

    model_config = ConfigDict(extra="ignore")

    summary: str = Field(min_length=1)
    salience: float = Field(ge=0.0, le=1.0)
    emotion: Emotion = Emotion()
    key_terms: list[str] = Field(default_factory=list)

    @field_validator("summary")
    @classmethod
    def _summary(cls, value: str) -> str:
        value = " ".join(value.split())
        if not value:
            raise ValueError("summary is empty")
        if is_markup(value):
            raise ValueError("the summary is markup, not prose")
        return value[:MAX_SUMMARY_CHARS]

    @field_validator("emotion", mode="before")
    @classmethod
    def _emotion(cls, value: object) -> object:
        # Small models often answer a bare label; accept it rather than waste the retry.
        return {"label": value} if isinstance(value, str) else value

    @field_validator("key_terms", mode="before")
    @classmethod
    def _terms(cls, value: object) -> object:
        if isinstance(value, str):
            value = [t for t in re.split(r"[,;\n]", value)]
        if not isinstance(value, list):
            raise ValueError("key_terms must be a list of strings")
        out: list[str] = []
        for term in value:
            if not isinstance(term, str):
                raise ValueError("key_terms must be a list of strings")
            term = " ".join(term.split())[:60]
            if term and term.lower() not in {t.lower() for t in out}:
                out.append(term)
        return out[:8]


def parse(text: str) -> EpisodeSummary:
    """Validate the model's answer; `ValueError` (with a short reason) when it is unusable."""
    read = read_model_json(text, EpisodeSummary)
    if read.value is None:
        raise ValueError(read.reason)
    return read.value
