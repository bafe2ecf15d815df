"""`strata eval recall`: measure turn-zero recall on a long-conversation data set (LoCoMo).

Reads the JSONL format of shared/datasets/FORMAT.md (turns and questions). For each
conversation it builds a fresh store in a temporary folder with one person and one private
channel (through `App.create`, so storage, episode cutting and recall are exactly the chat's),
ingests the turns as transcript rows with their own timestamps and roles (no replies are
generated), runs the chat's after-turn steps (episode cut, row vectors) after each turn with the
clock at the turn's time, then asks each question at its `asked_at` through the real turn-zero
recall and records which turn ids the injected block cites (an episode cites its rows).

Speaker names: a LoCoMo conversation has two speakers and the questions name them, so each row
is stored as `Name: text` (plus ` [shares a photo: caption]` when the turn had an image), the
way a shared room shows who said what.

Pure parts (loading, scoring, the abstention sample, the table) are separate functions so they
can be tested without a model. Imports `bot` (the app, config, clock, tokens) and `memory`.
"""

from __future__ import annotations

import json
import logging
import random
import re
import tempfile
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from strata.app.compose import App
from strata.app.memory_wiring import make_lifecycle_policy
from strata.core.clock import ManualClock, from_iso
from strata.core.config import DbSettings, Settings
from strata.core.errors import StrataError
from strata.core.tokens import count_tokens
from strata.core.types import Channel, ChannelKind, NewRow, Person, Role
from strata.memory.domain.janitor import decay_pass
from strata.memory.domain.recall import render_span
from strata.memory.domain.rollup import consolidate_owner
from strata.memory.engines.fts import STOPWORDS

log = logging.getLogger(__name__)
_WORD = re.compile(r"\w+", re.UNICODE)

ADVERSARIAL = "adversarial"
EPISODE_MODES = ("extractive", "llm")
METRIC_KEYS = (
    "evidence_recall",
    "hit_rate",
    "mean_injected_tokens",
    "empty_rate",
    "latency_ms_p50",
    "latency_ms_p95",
    "answer_coverage",
)


class EvalDataError(StrataError):
    """An eval input file is missing or malformed; the message names the file and line."""


# -- input ----------------------------------------------------------------------------------------


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


# -- scoring --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """What recall injected for one question."""

    qid: str
    conv: str
    category: str
    evidence: tuple[str, ...]
    cited: frozenset[str]
    tokens: int
    latency_ms: float
    abstention: bool = False
    block: str = ""  # the exact injected text ("" when nothing was injected)
    answer: str = ""  # the gold answer

    @property
    def answer_coverage(self) -> float:
        """The share of the gold answer's content words that the injected block contains."""
        return answer_coverage(self.answer, self.block)

    @property
    def injected(self) -> bool:
        return self.tokens > 0

    @property
    def scored(self) -> bool:
        """Counts for evidence recall: has evidence and is not adversarial."""
        return bool(self.evidence) and self.category != ADVERSARIAL

    @property
    def recall(self) -> float:
        ev = set(self.evidence)
        return len(ev & self.cited) / len(ev) if ev else 0.0


def content_words(text: str) -> set[str]:
    """Lower-cased words of `text` without stopwords (the answer-coverage vocabulary)."""
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def answer_coverage(answer: str, block: str) -> float:
    """The share of `answer`'s content words found in `block` (0 when it has none)."""
    want = content_words(answer)
    if not want:
        return 0.0
    have = {w for w in _WORD.findall(block.lower())}
    return len(want & have) / len(want)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else 0.0


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def metrics(
    answers: Sequence[Answer], *, with_evidence: Callable[[Answer], bool]
) -> dict[str, float]:
    """The six numbers for a group of answers; recall and hit rate over `with_evidence`."""
    ev = [a for a in answers if with_evidence(a)]
    lat = [a.latency_ms for a in answers]
    return {
        "evidence_recall": round(_mean([a.recall for a in ev]), 4),
        "hit_rate": round(_mean([1.0 if a.recall > 0 else 0.0 for a in ev]), 4),
        "mean_injected_tokens": round(_mean([float(a.tokens) for a in answers]), 2),
        "empty_rate": round(_mean([0.0 if a.injected else 1.0 for a in answers]), 4),
        "latency_ms_p50": round(_pct(lat, 50), 2),
        "latency_ms_p95": round(_pct(lat, 95), 2),
        "answer_coverage": round(_mean([a.answer_coverage for a in ev
                                        if content_words(a.answer)]), 4),
    }


def summarize(answers: Sequence[Answer], budget: int) -> dict[str, Any]:
    """The report of the issue. Evidence recall and hit rate count the questions with evidence
    outside `adversarial` (overall and per category; the adversarial row scores its distractor
    evidence, for information); tokens, empty rate and latency count every question asked about
    its own conversation. Abstention questions only feed `abstention`."""
    own = [a for a in answers if not a.abstention]
    absent = [a for a in answers if a.abstention]
    by_category: dict[str, dict[str, float]] = {}
    for cat in sorted({a.category for a in own}):
        group = [a for a in own if a.category == cat]
        by_category[cat] = metrics(group, with_evidence=lambda a: bool(a.evidence))
    # Per conversation as well: a split's mean can hide one conversation far from the rest,
    # which is what a tune/check gap needs to be read against.
    by_conversation: dict[str, dict[str, float]] = {}
    for conv in sorted({a.conv for a in answers}):
        mine = [a for a in own if a.conv == conv]
        by_conversation[conv] = {
            "questions": len(mine),
            **metrics(mine, with_evidence=lambda a: a.scored),
            "false_injection_rate": _false_injection([a for a in absent if a.conv == conv]),
        }
    return {
        "questions": len(own),
        "budget_tokens": budget,
        "overall": metrics(own, with_evidence=lambda a: a.scored),
        "by_category": by_category,
        "by_conversation": by_conversation,
        "abstention": {"n": len(absent), "false_injection_rate": _false_injection(absent)},
    }


def _false_injection(absent: Sequence[Answer]) -> float:
    """The share of questions about other conversations that got anything injected."""
    return round(_mean([1.0 if a.injected else 0.0 for a in absent]), 4)


def abstention_sample(
    questions: Sequence[EvalQuestion], conv: str, n: int
) -> list[EvalQuestion]:
    """`n` questions about other conversations (never adversarial ones, which may name this
    conversation's people), the same every run for the same inputs."""
    pool = sorted(
        (q for q in questions if q.conv != conv and q.category != ADVERSARIAL),
        key=lambda q: q.qid,
    )
    rng = random.Random(zlib.crc32(conv.encode()))
    return rng.sample(pool, min(n, len(pool)))


def format_table(report: dict[str, Any]) -> str:
    """A plain-text table of the report (overall, each category, abstention)."""
    head = f"{'':<14}{'recall':>8}{'hit':>8}{'tokens':>9}{'empty':>8}{'p50 ms':>9}{'p95 ms':>9}"
    lines = [f"recall eval: {report['questions']} questions, budget {report['budget_tokens']}"
             " tokens", head]

    def line(name: str, m: dict[str, float]) -> str:
        return (f"{name:<14}{m['evidence_recall']:>8.3f}{m['hit_rate']:>8.3f}"
                f"{m['mean_injected_tokens']:>9.1f}{m['empty_rate']:>8.3f}"
                f"{m['latency_ms_p50']:>9.1f}{m['latency_ms_p95']:>9.1f}")

    lines.append(line("overall", report["overall"]))
    for cat, m in report["by_category"].items():
        lines.append(line(cat + ("*" if cat == ADVERSARIAL else ""), m))
    by_conversation = report.get("by_conversation", {})
    base = report.get("baseline")
    if len(by_conversation) > 1 or base:
        extra = f"{base['method']:>9}" if base else ""
        lines.append(f"{'conversation':<14}{'recall':>8}{'hit':>8}{'tokens':>9}{'empty':>8}"
                     f"{'FI':>9}{'questions':>11}{extra}")
        rows = [*by_conversation.items(), *([("overall", report["overall"])] if base else [])]
        for conv, m in rows:
            theirs = (base["by_conversation"].get(conv, {}) if conv != "overall"
                      else base["overall"]) if base else {}
            fi = m.get("false_injection_rate", report["abstention"]["false_injection_rate"])
            lines.append(f"{conv:<14}{m['evidence_recall']:>8.3f}{m['hit_rate']:>8.3f}"
                         f"{m['mean_injected_tokens']:>9.1f}{m['empty_rate']:>8.3f}"
                         f"{fi:>9.3f}{m.get('questions', report['questions']):>11}"
                         + (f"{theirs.get('evidence_recall', 0.0):>9.3f}" if base else ""))
    ab = report["abstention"]
    lines.append(f"abstention: {ab['n']} questions from other conversations, "
                 f"false injection rate {ab['false_injection_rate']:.3f}")
    if ADVERSARIAL in report["by_category"]:
        lines.append("* adversarial: not part of the overall recall (scores its distractor turn)")
    return "\n".join(lines)


# -- running --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecallOutcome:
    """What one turn-zero recall injected: the block (None: nothing) and the rows it cites."""

    block: str | None
    tokens: int
    row_ids: frozenset[int]
    latency_ms: float
    # Rows the block claims to quote word for word: each counts only if its text is there.
    quoted: frozenset[int] = frozenset()


@dataclass
class EvalOptions:
    budget: int = 1000
    limit_convs: int | None = None
    # Only these conversations (0-based positions in the turns file), e.g. a tuning split.
    conversations: tuple[int, ...] | None = None
    episodes: str = "extractive"
    abstention_per_conv: int = 40
    # Run a full consolidate + decay pass (compaction, roll-up, janitor, pruning) after the
    # ingest, as the background jobs would, before asking: roll-up must not make memory worse.
    consolidate: bool = False
    # A PostgreSQL server (`postgresql://…`) to run on instead of a SQLite file: each
    # conversation gets a fresh database there, dropped afterwards.
    db_url: str | None = None


class Progress:
    """A progress bar (tqdm on stderr) or nothing."""

    def __init__(self, total: int, enabled: bool) -> None:
        self._bar: Any = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="q", desc="recall eval", leave=False)

    def step(self, n: int = 1, note: str | None = None) -> None:
        if self._bar is not None:
            if note:
                self._bar.set_postfix_str(note, refresh=False)
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def conversations(turns: Iterable[EvalTurn]) -> list[str]:
    """Conversation ids in order of first appearance."""
    return list(dict.fromkeys(t.conv for t in turns))


def speakers(turns: Sequence[EvalTurn]) -> tuple[str, str]:
    """The names of the `user` and the `assistant` side of a conversation."""
    def first(role: Role) -> str:
        return next((t.speaker for t in turns if t.role is role and t.speaker), role.value)

    return first(Role.USER), first(Role.ASSISTANT)


def _settings_for(settings: Settings, target: str, options: EvalOptions,
                  assistant: str) -> Settings:
    recall = settings.recall.model_copy(update={"budget_tokens": options.budget, "enabled": True})
    episodes = settings.episodes.model_copy(update={"use_model": options.episodes == "llm"})
    # The assistant side is a person too: episodes name it as the bot's own name.
    bot = settings.bot.model_copy(update={"name": assistant})
    lifecycle = settings.lifecycle.model_copy(
        update={"rollup_use_model": options.episodes == "llm", "compact_after_turn": False})
    return settings.model_copy(update={
        "db": DbSettings(path=target), "recall": recall, "episodes": episodes,
        "bot": bot, "lifecycle": lifecycle})


async def ingest_turn(app: App, clock: ManualClock, channel: Channel, person: Person,
                      turn: EvalTurn) -> int:
    """Append one turn as a transcript row at its own time, run the after-turn steps; the row."""
    clock.set(turn.ts)
    [row_id] = await app.transcript.append([NewRow(
        channel_id=channel.id,
        person_id=person.id if turn.role is Role.USER else None,
        ts=turn.ts, source=channel.source, role=turn.role, content=row_text(turn),
        turn_id=turn.turn_id,
    )])
    # The chat's memory-producing after-turn steps (row vectors, episode cut), awaited in
    # order (a chat runs them as background tasks): the same code, reproducible. Compaction
    # and fact extraction are left out: they shape the prompt or need the chat model.
    for hook in (app.row_indexer, app.cutter):
        if hook is not None:
            await hook(channel, person, turn.turn_id)
    return row_id


async def _ingest(app: App, clock: ManualClock, channel: Channel, person: Person,
                  turns: Sequence[EvalTurn]) -> dict[int, str]:
    """Append each turn as a transcript row at its own time and run the after-turn steps."""
    row_turn: dict[int, str] = {}
    for turn in turns:
        row_turn[await ingest_turn(app, clock, channel, person, turn)] = turn.turn_id
    # The last window is still open (no pause yet): close it, as the idle job would.
    if app.cutter is not None:
        await app.cutter.flush(channel.id, clock.now())
    return row_turn


RecallFn = Callable[[App, Channel, Person, str], Awaitable[RecallOutcome]]
# Builds the conversation's memory before the questions: {row id: turn id}. `--lived` brings
# its own (strata.evaluation.lived).
IngestFn = Callable[[App, ManualClock, Channel, Person, Sequence[EvalTurn]],
                    Awaitable[dict[int, str]]]


async def recall_once(app: App, channel: Channel, person: Person, query: str) -> RecallOutcome:
    """One turn-zero recall (strata.memory.domain.recall) over the person's memory at the clock's
    time.

    The search turn zero runs, read only: nothing is touched, so every question sees the same
    memory whatever was asked before it, and no row is left out as "already in the prompt's
    history" (as if the question came in a new chat of the same person). The latency counted
    is recall's own: the query is embedded first, outside the timing.
    """
    assert app.recall is not None
    vector = await app.recall.embed_query(query)
    start = time.perf_counter()
    result = await app.recall.search(channel.owner_id, query, app.clock.now(), vector=vector)
    elapsed = (time.perf_counter() - start) * 1000.0
    block = result.render()
    quoted = frozenset(r for i in result.items if i.kind == "window" for r in i.cited_rows)
    return RecallOutcome(block, result.tokens if block else 0,
                         frozenset(result.cited_row_ids), elapsed, quoted)


async def fts_baseline(app: App, channel: Channel, person: Person, query: str) -> RecallOutcome:
    """The keyword reference (`--baseline fts5`): the owner's rows by the engine's own keyword
    rank (FTS5 bm25 on SQLite), each quoted under its date header as recall quotes a span,
    filling the budget in rank order, counted the way recall's block is (the rendered text,
    headers included). No gate: it always injects what it finds."""
    budget = app.settings.recall.budget_tokens
    start = time.perf_counter()
    hits = await app.transcript.search(channel.owner_id, query, limit=200)
    used, rows, parts = 0, set(), []
    for row, _score in hits:
        text = render_span([{"content": row.content, "role": row.role.value, "speaker": None,
                             "ts": row.ts.isoformat()}], provenance=False)
        cost = count_tokens(text + "\n")
        if used + cost > budget:
            continue
        used += cost
        rows.add(row.id)
        parts.append(text)
    return RecallOutcome("\n".join(parts) if parts else None, used, frozenset(rows),
                         (time.perf_counter() - start) * 1000.0, frozenset(rows))


BASELINES: dict[str, RecallFn] = {"fts5": fts_baseline}


@asynccontextmanager
async def _store(options: EvalOptions) -> AsyncIterator[str]:
    """Where one conversation's memory lives: a fresh SQLite file in a temporary folder, or
    a fresh database on the `db_url` server; gone afterwards."""
    if options.db_url:
        from strata.memory.engines.pg.scratch import scratch_database  # psycopg only when asked for

        async with scratch_database(options.db_url, prefix="strata_eval") as url:
            yield url
    else:
        with tempfile.TemporaryDirectory(prefix="strata-eval-") as tmp:
            yield str(Path(tmp) / "eval.db")


async def _eval_conversation(
    settings: Settings, options: EvalOptions, turns: Sequence[EvalTurn],
    own: Sequence[EvalQuestion], foreign: Sequence[EvalQuestion],
    methods: Sequence[RecallFn], progress: Progress, ingest: IngestFn = _ingest,
) -> list[list[Answer]]:
    """Each method's answers to every question, asked of one memory built once."""
    conv = turns[0].conv
    async with _store(options) as target:
        clock = ManualClock(turns[0].ts)
        user, assistant = speakers(turns)
        app = await App.create(_settings_for(settings, target, options, assistant),
                               clock=clock)
        try:
            person = await app.persons.get_or_create(f"eval:{conv}", user, clock.now())
            channel = await app.channels.get_or_create(
                platform="eval", room_ref=conv, owner_id=person.id, kind=ChannelKind.PRIVATE,
                source="user", now=clock.now(), name=conv)
            row_turn = await ingest(app, clock, channel, person, turns)
            texts = {t.turn_id: row_text(t) for t in turns}
            progress.step(0, f"{conv}: {len(turns)} turns in")
            if options.consolidate:
                done = await consolidate_owner(app.db, app.chat, app.embedder, person.id,
                                               clock.now(), make_lifecycle_policy(app.settings))
                decayed = await decay_pass(app.db, clock.now(), person.id)
                log.info("%s: consolidate %s; decay %s", conv, done, decayed)
            answers: list[list[Answer]] = [[] for _ in methods]
            for q, is_abstention in [*((q, False) for q in own), *((q, True) for q in foreign)]:
                clock.set(q.asked_at)
                for method, out in zip(methods, answers, strict=True):
                    outcome = await method(app, channel, person, q.question)
                    out.append(_answer(q, conv, is_abstention, outcome, row_turn, texts))
                progress.step(1)
        finally:
            await app.close()
    return answers


def _answer(q: EvalQuestion, conv: str, is_abstention: bool, outcome: RecallOutcome,
            row_turn: dict[int, str], texts: dict[str, str]) -> Answer:
    """What one method injected for one question, with the turns it really quotes."""
    block = outcome.block or ""
    cited = frozenset(
        row_turn[r] for r in outcome.row_ids if r in row_turn
        and (r not in outcome.quoted or quoted_in(texts[row_turn[r]], block)))
    return Answer(q.qid, conv, q.category, () if is_abstention else q.evidence, cited,
                  outcome.tokens if outcome.block else 0, outcome.latency_ms, is_abstention,
                  block, "" if is_abstention else q.answer)


async def run_eval(
    settings: Settings, turns: Sequence[EvalTurn], questions: Sequence[EvalQuestion],
    options: EvalOptions, *, recall: RecallFn = recall_once, show_progress: bool = True,
    ingest: IngestFn = _ingest, baseline: str | None = None,
) -> tuple[dict[str, Any], list[Answer]]:
    """Evaluate every conversation (or the first `limit_convs`); the report and each answer.
    `baseline` (a name of `BASELINES`): that method too, on the same memory and questions,
    reported beside under `baseline`."""
    if baseline is not None and baseline not in BASELINES:
        raise StrataError(f"--baseline must be one of {', '.join(BASELINES)}")
    if options.episodes not in EPISODE_MODES:
        raise StrataError(f"--episodes must be one of {', '.join(EPISODE_MODES)}")
    if options.budget <= 0:
        raise StrataError("--budget must be a positive number of tokens")
    convs = conversations(turns)
    if options.conversations is not None:
        bad = [i for i in options.conversations if not 0 <= i < len(convs)]
        if bad:
            raise StrataError(f"--conversations: no conversation {bad[0]} (there are "
                              f"{len(convs)}, numbered from 0)")
        convs = [convs[i] for i in sorted(set(options.conversations))]
    if options.limit_convs is not None:
        convs = convs[: max(options.limit_convs, 0)]
    known = set(conversations(turns))
    stray = sorted({q.conv for q in questions} - known)
    if stray:
        raise EvalDataError(f"questions about conversations with no turns: {', '.join(stray)}")
    turn_ids = {t.turn_id for t in turns}
    for q in questions:
        missing = [e for e in q.evidence if e not in turn_ids]
        if missing:
            raise EvalDataError(f"question {q.qid}: evidence {missing[0]} is not a turn id")
    plan = []
    for conv in convs:
        own = [q for q in questions if q.conv == conv]
        foreign = abstention_sample(questions, conv, options.abstention_per_conv)
        plan.append((conv, own, foreign))
    progress = Progress(sum(len(o) + len(f) for _, o, f in plan), show_progress)
    methods = [recall] + ([BASELINES[baseline]] if baseline is not None else [])
    answers: list[Answer] = []
    reference: list[Answer] = []
    try:
        for conv, own, foreign in plan:
            conv_turns = [t for t in turns if t.conv == conv]
            mine, *theirs = await _eval_conversation(
                settings, options, conv_turns, own, foreign, methods, progress, ingest)
            answers += mine
            reference += theirs[0] if theirs else []
    finally:
        progress.close()
    report = summarize(answers, options.budget)
    if baseline is not None:
        report["baseline"] = {"method": baseline, **summarize(reference, options.budget)}
    return report, answers


def quoted_in(text: str, block: str) -> bool:
    """Whether a row's text is in the block (its first 60 characters, whitespace-normalised:
    a long row is quoted cut at recall's per-row limit)."""
    head = " ".join(text.split())[:60]
    return head in " ".join(block.replace("\n  > ", " ").split())


def answer_record(a: Answer) -> dict[str, Any]:
    """One line of the `--details` file, with the exact injected block."""
    return {"qid": a.qid, "conv": a.conv, "category": a.category, "abstention": a.abstention,
            "evidence": list(a.evidence), "cited": sorted(a.cited), "recall": round(a.recall, 4),
            "answer": a.answer, "answer_coverage": round(a.answer_coverage, 4),
            "tokens": a.tokens, "latency_ms": round(a.latency_ms, 2), "injected": a.block}


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
