"""The eval's input: the JSONL turns and questions of a LoCoMo-format data set (the format is
described with the data set), validated line by line; a bad line is an `EvalDataError` that names
the file and the line. Pure: no store, no model."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from strata.core.clock import from_iso
from strata.core.errors import StrataError
from strata.core.types import Role

ADVERSARIAL = "adversarial"


class EvalDataError(StrataError):
    """An eval input file is missing or malformed; the message names the file and line."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class _TurnIn(_Record):
    conv: str = Field(min_length=1)
    turn_id: str = Field(min_length=1)
    ts: str
    speaker: str
    role: str
    text: str
    img_caption: str | None = None

    @field_validator("role")
    @classmethod
    def _role(cls, v: str) -> str:
        if v not in ("user", "assistant"):
            raise ValueError("role must be 'user' or 'assistant'")
        return v


class _QuestionIn(_Record):
    conv: str = Field(min_length=1)
    qid: str = Field(min_length=1)
    question: str
    category: str = Field(min_length=1)
    evidence: list[str] = Field(default_factory=list)
    asked_at: str
    answer: str | int | float | None = None


@dataclass(frozen=True, slots=True)
class EvalTurn:
    conv: str
    turn_id: str
    ts: datetime
    speaker: str
    role: Role
    text: str
    img_caption: str | None = None


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    conv: str
    qid: str
    question: str
    category: str
    evidence: tuple[str, ...]
    asked_at: datetime
    answer: str = ""


M = TypeVar("M", bound=BaseModel)


def _read_jsonl(path: Path, model: type[M]) -> list[M]:
    if not path.is_file():
        raise EvalDataError(f"{path}: no such file")
    out: list[M] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append(model.model_validate_json(line))
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"]) or "line"
                raise EvalDataError(f"{path}:{lineno}: {where}: {err['msg']}") from None
    if not out:
        raise EvalDataError(f"{path}: no records")
    return out


def _time(path: Path, what: str, text: str) -> datetime:
    try:
        return from_iso(text)
    except ValueError:
        raise EvalDataError(f"{path}: {what}: not an ISO-8601 time: {text!r}") from None


def load_turns(path: Path) -> list[EvalTurn]:
    """The turns of `path` (turns.jsonl), in file order; turn ids must be unique."""
    turns = [
        EvalTurn(t.conv, t.turn_id, _time(path, t.turn_id, t.ts), t.speaker, Role(t.role),
                 t.text, t.img_caption or None)
        for t in _read_jsonl(path, _TurnIn)
    ]
    seen: set[str] = set()
    for t in turns:
        if t.turn_id in seen:
            raise EvalDataError(f"{path}: turn id {t.turn_id} appears twice")
        seen.add(t.turn_id)
    return turns


def load_questions(path: Path) -> list[EvalQuestion]:
    """The questions of `path` (questions.jsonl), in file order."""
    return [
        EvalQuestion(q.conv, q.qid, q.question, q.category, tuple(q.evidence),
                     _time(path, q.qid, q.asked_at), "" if q.answer is None else str(q.answer))
        for q in _read_jsonl(path, _QuestionIn)
    ]


def row_text(turn: EvalTurn) -> str:
    """What is stored for a turn: the speaker's name first, so recall can match names."""
    text = f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text
    if turn.img_caption:
        text += f" [shares a photo: {turn.img_caption}]"
    return text


def conversations(turns: Iterable[EvalTurn]) -> list[str]:
    """Conversation ids in order of first appearance."""
    return list(dict.fromkeys(t.conv for t in turns))


def check_questions(turns: Sequence[EvalTurn], questions: Sequence[EvalQuestion]) -> None:
    """Every question is about a conversation with turns and cites turns that exist; else an
    `EvalDataError` naming the first that does not."""
    known = set(conversations(turns))
    stray = sorted({q.conv for q in questions} - known)
    if stray:
        raise EvalDataError(f"questions about conversations with no turns: {', '.join(stray)}")
    turn_ids = {t.turn_id for t in turns}
    for q in questions:
        missing = [e for e in q.evidence if e not in turn_ids]
        if missing:
            raise EvalDataError(f"question {q.qid}: evidence {missing[0]} is not a turn id")


def speakers(turns: Sequence[EvalTurn]) -> tuple[str, str]:
    """The names of the `user` and the `assistant` side of a conversation."""
    def first(role: Role) -> str:
        return next((t.speaker for t in turns if t.role is role and t.speaker), role.value)

    return first(Role.USER), first(Role.ASSISTANT)
