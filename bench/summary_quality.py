"""Episode summaries (part of `bench.model_quality`): how many of the source's names, places,
dates and numbers the model's episode summaries keep, against the extractive fallback.

The source dialogues are the first `WINDOWS` episode windows of each held-out LoCoMo
conversation (3-4), cut by Strata's own `cut_windows` from the turns as `strata eval recall`
stores them ("Name: text"). Each window is summarised twice by the app's own episode cutter:
once as configured for a model (`EpisodeCutter.draft`: the model's JSON under its schema,
checked, retried once, else the extractive fallback) and once with the model turned off (the
extractive fallback itself). The entities are found in the window's text by rule
(`bench.quality_scores.entities`); a summary keeps the ones it contains.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.quality_scores import entities, kept
from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.config_sections import DbSettings
from strata.core.tokens import count_tokens
from strata.core.types import ChannelKind, NewRow
from strata.evaluation.recall_data import EvalTurn, row_text, speakers
from strata.memory.lifecycle.episode_cut import cut_windows

WINDOWS = 8  # per conversation


def _settings(settings: Settings, folder: Path, assistant: str) -> Settings:
    return settings.model_copy(update={
        "db": DbSettings(path=str(folder / "summaries.db")),
        "episodes": settings.episodes.model_copy(update={"use_model": True}),
        "bot": settings.bot.model_copy(update={"name": assistant}),
    })


def score(source: str, summary: str) -> dict[str, Any]:
    """What one summary keeps of its source's entities."""
    want = entities(source)
    have = kept(want, summary)
    return {"entities": len(want), "kept": len(have), "missed": sorted(want - have),
            "tokens": count_tokens(summary)}


async def _conversation(settings: Settings, turns: Sequence[EvalTurn],
                        windows: int) -> list[dict[str, Any]]:
    user, assistant = speakers(turns)
    with tempfile.TemporaryDirectory(prefix="strata-summaries-") as tmp:
        clock = ManualClock(turns[0].ts)
        app = await App.create(_settings(settings, Path(tmp), assistant), clock=clock)
        try:
            person = await app.persons.get_or_create(f"eval:{turns[0].conv}", user, clock.now())
            channel = await app.channels.get_or_create(
                platform="eval", room_ref=turns[0].conv, owner_id=person.id,
                kind=ChannelKind.PRIVATE, source="user", now=clock.now())
            # Enough turns for the windows wanted (a window is at most window_turns turns).
            some = turns[: windows * app.settings.episodes.window_turns * 2]
            await app.transcript.append([
                NewRow(channel.id, person.id if t.role.value == "user" else None, t.ts, "user",
                       t.role, row_text(t), t.turn_id) for t in some])
            rows = await app.transcript.for_owner(person.id)
            cut = cut_windows(rows, window_turns=app.settings.episodes.window_turns,
                              pause=timedelta(minutes=app.settings.episodes.pause_minutes),
                              now=rows[-1].ts, flush=True)
            assert app.cutter is not None
            model_cutter = app.cutter
            extractive = dataclasses.replace(model_cutter, windows=dataclasses.replace(
                model_cutter.windows, settings=dataclasses.replace(model_cutter.settings,
                                                                   use_model=False)))
            out: list[dict[str, Any]] = []
            for w in [w for w in cut if w.rows][:windows]:
                source = "\n".join(r.content for r in w.rows)
                started = time.monotonic()
                drafted = await model_cutter.draft(list(w.rows))
                seconds = time.monotonic() - started
                plain = await extractive.draft(list(w.rows))
                out.append({"conv": turns[0].conv, "turn_ids": [w.rows[0].turn_id,
                                                                w.rows[-1].turn_id],
                            "model_method": drafted.method, "model_seconds": round(seconds, 1),
                            "model_summary": drafted.summary,
                            "model": score(source, drafted.summary),
                            "extractive": score(source, plain.summary)})
                print(f"summary {len(out)} {turns[0].conv}: {drafted.method} "
                      f"{out[-1]['model']['kept']}/{out[-1]['model']['entities']} vs "
                      f"{out[-1]['extractive']['kept']} in {seconds:.1f} s", flush=True)
        finally:
            await app.close()
    return out


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Entity retention (kept / entities, pooled) of each method, and of the model on the
    windows where its own summary was used (not the fallback)."""
    def pooled(items: Sequence[dict[str, Any]], key: str) -> dict[str, Any]:
        total = sum(r[key]["entities"] for r in items)
        return {"windows": len(items), "entities": total,
                "kept": sum(r[key]["kept"] for r in items),
                "retention": round(sum(r[key]["kept"] for r in items) / total, 4)
                if total else None,
                "mean_tokens": round(sum(r[key]["tokens"] for r in items) / len(items), 1)
                if items else None}

    by_model = [r for r in rows if r["model_method"] == "llm"]
    return {"model": pooled(rows, "model"), "extractive": pooled(rows, "extractive"),
            "model_written": pooled(by_model, "model"),
            "fallbacks": len(rows) - len(by_model)}


async def measure(settings: Settings, turns: Sequence[EvalTurn], convs: Sequence[str],
                  windows: int = WINDOWS) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for conv in convs:
        rows += await _conversation(settings, [t for t in turns if t.conv == conv], windows)
    return {"conversations": list(convs), "windows_per_conversation": windows,
            **summarize(rows), "rows": rows}
