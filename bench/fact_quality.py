"""Fact extraction precision and recall with a real model, through Strata's own pipeline:
each labelled utterance (bench/fact_labels.py, 62 with 26 negatives) is said by a new person,
the paused conversation is cut into an episode (extractively, so only facts are measured), and
the fact extractor asks the model under its JSON schema and applies its checks. What it
stores is scored against the labels. Writes bench/results/fact_quality_<model>.json.

    python -m bench.fact_quality                  # the embedded default model
    STRATA_LLM_BASE_URL=... python -m bench.fact_quality   # any configured endpoint

A stored fact is right when it contains all the words of one expected fact of its utterance;
precision = right stored facts / stored facts, recall = expected facts found / expected facts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.fact_labels import LABELS
from bot.app import App
from bot.clock import ManualClock
from bot.config import default_db_path, load_settings
from bot.embedded import model_endpoints
from bot.types import ChannelKind, NewRow, Role
from memory.fact_extraction import model_completer

RESULTS = Path(__file__).parent / "results"
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _matches(text: str, expected: tuple[str, ...]) -> bool:
    low = text.lower()
    return all(word in low for word in expected)


async def _one(app: App, clock: ManualClock, i: int, utterance: str) -> list[str]:
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
    report = await app.extractor.run(person.id, model_completer(app.chat),
                                     now + timedelta(hours=2))
    print(f"{i:2d} {utterance[:50]!r}: {report.line()}", flush=True)
    return [f.text for f in await app.facts.repo.for_owner(person.id)]


async def measure(limit: int | None) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="strata-facts-"))
    env = {**os.environ, "STRATA_DB": str(folder / "facts.db"),
           "STRATA_EPISODES_USE_MODEL": "false"}
    settings = load_settings(None, env=env)
    cache = default_db_path(os.environ).parent / "models"
    rows: list[dict[str, Any]] = []
    async with model_endpoints(settings, cache_dir=cache, notice=print) as effective:
        clock = ManualClock(START)
        app = await App.create(effective, clock=clock)
        try:
            started = time.monotonic()
            for i, (utterance, expected) in enumerate(LABELS[:limit]):
                stored = await _one(app, clock, i, utterance)
                right = [s for s in stored if any(_matches(s, e) for e in expected)]
                found = [e for e in expected if any(_matches(s, e) for s in stored)]
                rows.append({"utterance": utterance, "expected": [" ".join(e) for e in expected],
                             "stored": stored, "right": len(right), "found": len(found)})
                clock.advance(hours=3)
            seconds = time.monotonic() - started
        finally:
            await app.close()
        model = effective.llm.model
    stored_n = sum(len(r["stored"]) for r in rows)
    expected_n = sum(len(r["expected"]) for r in rows)
    negatives = [r for r in rows if not r["expected"]]
    return {
        "model": model,
        "utterances": len(rows),
        "negatives": len(negatives),
        "expected_facts": expected_n,
        "stored_facts": stored_n,
        "precision": round(sum(r["right"] for r in rows) / stored_n, 3) if stored_n else None,
        "recall": round(sum(r["found"] for r in rows) / expected_n, 3) if expected_n else None,
        "negatives_with_a_fact": sum(1 for r in negatives if r["stored"]),
        "seconds": round(seconds, 1),
        "command": "python -m bench.fact_quality",
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N utterances")
    args = parser.parse_args()
    report = asyncio.run(measure(args.limit))
    out = RESULTS / f"fact_quality_{report['model'].replace('/', '_')}.json"
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=1))


if __name__ == "__main__":
    main()
