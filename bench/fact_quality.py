"""Fact extraction precision and recall with a real model, through Strata's own pipeline:
each labelled utterance (bench/fact_labels.py, 128 with 56 negatives) is said by a new person,
the paused conversation is cut into an episode (extractively, so only facts are measured), and
the fact extractor asks the model under its JSON schema, reads plain statements without the
model (strata.memory.facts.plain) and applies its checks to both. What it stores is
scored against the labels. Run as the `facts` part of `python -m bench.model_quality`.

A stored fact is right when it contains all the words of one expected fact of its utterance;
precision = right stored facts / stored facts, recall = expected facts found / expected facts.
`model_free` scores the model-free path alone on the same labels (no model, no checks), so the
share of the result that comes from the model can be seen.
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.fact_labels import LABELS, Label
from strata.app.compose import App
from strata.bot.writers.facts import model_completer
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.config_sections import DbSettings
from strata.core.errors import ModelError
from strata.core.types import ChannelKind, NewRow, Role
from strata.memory.facts.plain import plain_candidates

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _matches(text: str, expected: tuple[str, ...]) -> bool:
    low = text.lower()
    return all(word in low for word in expected)


async def _one(app: App, clock: ManualClock, i: int,
               utterance: str) -> tuple[list[str], str | None]:
    now = clock.now()
    person = await app.persons.get_or_create(f"console:u{i}", f"u{i}", now)
    channel = await app.channels.get_or_create(
        platform="console", room_ref=f"u{i}/default", owner_id=person.id,
        kind=ChannelKind.PRIVATE, source="user", now=now)
    await app.transcript.append([
        NewRow(channel.id, person.id, now, "user", Role.USER, utterance, f"t{i}"),
        NewRow(channel.id, None, now, "user", Role.ASSISTANT, "I see.", f"t{i}")])
    assert app.cutter is not None
    await app.cutter.cut(channel.id, now + timedelta(hours=2))
    try:
        report = await app.extractor.run(person.id, model_completer(app.chat),
                                         now + timedelta(hours=2))
        line, error = report.line(), None
    except ModelError as exc:  # what the model-free path kept is still stored
        line = error = str(exc)
    stored = [f.text for f in await app.facts.repo.for_owner(person.id)]
    print(f"{i:3d} {utterance[:50]!r}: {line}; stored {stored}", flush=True)
    return stored, error


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Precision and recall of rows of {"expected": [...], "stored": [...]}."""
    right = found = 0
    for r in rows:
        expected = [(e,) for e in r["expected"]]  # each expected fact is one phrase
        right += sum(1 for s in r["stored"] if any(_matches(s, e) for e in expected))
        found += sum(1 for e in expected if any(_matches(s, e) for s in r["stored"]))
    stored_n = sum(len(r["stored"]) for r in rows)
    expected_n = sum(len(r["expected"]) for r in rows)
    negatives = [r for r in rows if not r["expected"]]
    return {
        "stored_facts": stored_n,
        "precision": round(right / stored_n, 3) if stored_n else None,
        "recall": round(found / expected_n, 3) if expected_n else None,
        "negatives_with_a_fact": sum(1 for r in negatives if r["stored"]),
    }


def model_free(limit: int | None = None, every: int = 1) -> dict[str, Any]:
    """The model-free path alone on the labels."""
    return score([{"expected": [" ".join(e) for e in expected],
                   "stored": [c.text for c in plain_candidates(0, utterance)]}
                  for utterance, expected in labels(limit, every)])


def labels(limit: int | None = None, every: int = 1) -> list[Label]:
    """Every `every`-th label (a sample across all classes for a slow model), at most `limit`."""
    return list(LABELS[::every][:limit])


async def measure(settings: Settings, limit: int | None = None,
                  every: int = 1) -> dict[str, Any]:
    """Extract from each labelled utterance (or every `every`-th) with the chat model of
    `settings` (an endpoint that answers: `bench.model_quality` starts the embedded one when
    none is configured)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="strata-facts-") as folder:
        effective = settings.model_copy(update={
            "db": DbSettings(path=str(Path(folder) / "facts.db")),
            "episodes": settings.episodes.model_copy(update={"use_model": False})})
        clock = ManualClock(START)
        app = await App.create(effective, clock=clock)
        try:
            started = time.monotonic()
            for i, (utterance, expected) in enumerate(labels(limit, every)):
                stored, error = await _one(app, clock, i, utterance)
                right = [s for s in stored if any(_matches(s, e) for e in expected)]
                found = [e for e in expected if any(_matches(s, e) for s in stored)]
                rows.append({"utterance": utterance,
                             "expected": [" ".join(e) for e in expected],
                             "stored": stored, "right": len(right), "found": len(found),
                             "model_error": error})
                clock.advance(hours=3)
            seconds = time.monotonic() - started
        finally:
            await app.close()
    expected_n = sum(len(r["expected"]) for r in rows)
    return {
        "model": effective.llm.model,
        "utterances": len(rows),
        "negatives": sum(1 for r in rows if not r["expected"]),
        "expected_facts": expected_n,
        **score(rows),
        "seconds": round(seconds, 1),
        "seconds_per_utterance": round(seconds / len(rows), 1) if rows else None,
        "model_errors": sum(1 for r in rows if r["model_error"]),
        "model_free": model_free(limit, every),
        "rows": rows,
    }
