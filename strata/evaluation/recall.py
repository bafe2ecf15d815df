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
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strata.app.compose import App
from strata.app.memory_wiring import make_lifecycle_policy
from strata.bot.writers.consolidate import consolidate_owner
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.config_sections import DbSettings
from strata.core.errors import StrataError
from strata.core.tokens import count_tokens
from strata.core.types import Channel, ChannelKind, NewRow, Person, Role
from strata.evaluation.recall_data import (
    EvalQuestion,
    EvalTurn,
    check_questions,
    conversations,
    row_text,
    speakers,
)
from strata.evaluation.recall_metrics import Answer, abstention_sample, quoted_in, summarize
from strata.memory.lifecycle.passes import MemoryLifecycle
from strata.memory.recall.render import priced_span, render_span
from strata.memory.store.forgetting.janitor import decay_pass
from strata.memory.store.lifecycle import LifecycleStore

log = logging.getLogger(__name__)

EPISODE_MODES = ("extractive", "llm")


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
    # The assistant side is the bot, not a second person (a person-and-bot chat such as
    # bench/heldout/paraphrase): recall treats its replies as in a real chat, not as evidence.
    assistant_is_bot: bool = False


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


# The eval measures what recall finds, not how fast a busy embedder answers: a query's vector
# may take this long (recall's own limit, 10 s, would silently turn a question on a loaded
# machine into a keyword-only search and change the figures from run to run).
QUERY_EMBED_SECONDS = 600.0


def _settings_for(settings: Settings, target: str, options: EvalOptions,
                  assistant: str) -> Settings:
    # The assistant side is the conversation's second person, not a bot: its words are
    # evidence (a chat's bot replies are not, `assistant_as_evidence`), unless it is the bot.
    recall = settings.recall.model_copy(update={
        "budget_tokens": options.budget, "enabled": True,
        "assistant_as_evidence": not options.assistant_is_bot,
        "query_embed_seconds": max(settings.recall.query_embed_seconds, QUERY_EMBED_SECONDS)})
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


async def recall_once(app: App, channel: Channel, person: Person, query: str,
                      also: Sequence[str] = ()) -> RecallOutcome:
    """One turn-zero recall (strata.memory.recall.search) over the person's memory at the clock's
    time.

    The search turn zero runs, read only: nothing is touched, so every question sees the same
    memory whatever was asked before it, and no row is left out as "already in the prompt's
    history" (as if the question came in a new chat of the same person). The latency counted
    is recall's own: the query is embedded first, outside the timing. `also`: extra lines
    to search with (a hypothetical turn, `strata.evaluation.hypothetical`).
    """
    assert app.recall is not None
    vector = await app.recall.embed_query(query, also)
    if vector is None and query.strip():
        # Recall would go on with keywords only (and has logged why): a figure made so is not
        # the one asked for, so the eval stops instead of reporting it.
        raise StrataError(f"the embedder gave no vector for the question {query[:60]!r} (see"
                          " the warning above); the eval stops rather than report keyword-only"
                          " recall as recall")
    start = time.perf_counter()
    result = await app.recall.search(channel.owner_id, query, app.clock.now(), vector=vector,
                                     also=also)
    elapsed = (time.perf_counter() - start) * 1000.0
    block = result.render()
    quoted = frozenset(r for i in result.items if i.kind == "window" for r in i.cited_rows)
    return RecallOutcome(block, result.tokens if block else 0,
                         frozenset(result.cited_row_ids), elapsed, quoted)


async def fts_baseline(app: App, channel: Channel, person: Person, query: str) -> RecallOutcome:
    """The keyword reference (`--baseline fts5`): the owner's rows by the engine's own keyword
    rank (FTS5 bm25 on SQLite), each quoted under its date header as recall quotes a span,
    filling the budget in rank order, priced the way recall prices a span (`priced_span`,
    headers included). No gate: it always injects what it finds."""
    budget = app.settings.recall.budget_tokens
    start = time.perf_counter()
    hits = await app.transcript.search(channel.owner_id, query, limit=200)
    used, rows, parts = 0, set(), []
    for row, _score in hits:
        quoted = [{"content": row.content, "role": row.role.value, "speaker": None,
                   "ts": row.ts.isoformat()}]
        cost = count_tokens(priced_span(quoted, provenance=False) + "\n")
        if used + cost > budget:
            continue
        used += cost
        rows.add(row.id)
        parts.append(render_span(quoted, provenance=False))
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
                assert app.repos is not None
                store = LifecycleStore(app.db, app.repos.episodes, app.repos.refusals)
                lifecycle = MemoryLifecycle(store, app.embedder)
                done = await consolidate_owner(lifecycle, app.chat, person.id, clock.now(),
                                               make_lifecycle_policy(app.settings))
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


def _chosen_conversations(turns: Sequence[EvalTurn], options: EvalOptions) -> list[str]:
    """The conversations to evaluate: `--conversations`, then `--limit-convs`."""
    convs = conversations(turns)
    if options.conversations is not None:
        bad = [i for i in options.conversations if not 0 <= i < len(convs)]
        if bad:
            raise StrataError(f"--conversations: no conversation {bad[0]} (there are "
                              f"{len(convs)}, numbered from 0)")
        convs = [convs[i] for i in sorted(set(options.conversations))]
    if options.limit_convs is not None:
        convs = convs[: max(options.limit_convs, 0)]
    return convs


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
    convs = _chosen_conversations(turns, options)
    check_questions(turns, questions)
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


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
