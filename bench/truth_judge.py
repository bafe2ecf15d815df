"""What the truthfulness benchmark (`bench.truth`) reads back after the people have lived: every
stored item of every model-written layer, classed by `bench.truth_classify`; the planted facts'
recall; the issue's cases; and the text table. Reads through the repositories only.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from bench.truth_classify import (
    CLASSES,
    LAYERS,
    Echoes,
    Sources,
    classify,
    has_words,
    sentences,
    words,
)
from bench.truth_people import Person
from strata.app.compose import App
from strata.core.types import Channel, InboundMessage, Role, RowKind
from strata.core.types import Person as Owner
from strata.evaluation.recall import recall_once

# Every module whose text a model is shown by Strata (prompts, schemas, the persona's module).
PROMPT_PACKAGES = ("strata.cognition.prompts",)
PROMPT_MODULES = ("strata.bot.prompt", "strata.bot.turn_prompt", "strata.bot.background")
TARGETS = {"echo": 0, "unsupported_share": 0.05, "recall": 0.6}


def message(person: Person, text: str, now: datetime) -> InboundMessage:
    """A console message of `person` (how `strata chat --user KEY` sends it)."""
    return InboundMessage(platform="console", room_id=f"{person.key}/default",
                          sender_id=person.key, sender_name=person.name, text=text, ts=now)


def _modules() -> list[Any]:
    mods = [importlib.import_module(m) for m in PROMPT_MODULES]
    for package in PROMPT_PACKAGES:
        pkg = importlib.import_module(package)
        mods.append(pkg)
        mods += [importlib.import_module(f"{package}.{m.name}")
                 for m in pkgutil.iter_modules(pkg.__path__)]
    return mods


def prompt_texts(app: App) -> list[str]:
    """The strings of every prompt module, its schemas, the persona and the tools' texts."""
    texts = [app.settings.bot.persona]
    for mod in _modules():
        for value in vars(mod).values():
            if isinstance(value, str) and len(value) >= 20:
                texts.append(value)
            elif (inspect.isclass(value) and issubclass(value, BaseModel)
                  and value is not BaseModel):
                texts.append(json.dumps(value.model_json_schema()))
    for spec in app.processor.tools.specs.values():
        texts += [spec.description, json.dumps(dict(spec.parameters))]
    return texts


def echoes_of(app: App) -> Echoes:
    return Echoes.of(prompt_texts(app), app.processor.tools.specs)


def _layer(kind: str, source: str) -> str:
    if kind == "behavioral_pattern":
        return "pattern"
    if kind == "place" and source == "job:geo":
        return "geo"
    if kind in ("reflection", "discovery"):
        return kind
    return "fact"


async def stored(app: App, owner: Owner) -> list[dict[str, Any]]:
    """Every model-written item of `owner`: facts of every kind (any status: a fact stored and
    later retracted was stored), the latest portrait's sentences, continuity summaries, episode
    and roll-up summaries (tombstoned ones too)."""
    assert app.services is not None and app.episodes is not None
    items: list[dict[str, Any]] = []
    for f in await app.facts.repo.for_owner(owner.id, live_only=False):
        items.append({"layer": _layer(f.kind, f.source), "id": f"fact:{f.id}", "text": f.text,
                      "source": f.source, "status": f.status})
    portrait = await app.services.portraits.latest(owner.id)
    if portrait is not None:
        for i, sentence in enumerate(sentences(portrait.text)):
            items.append({"layer": "portrait", "id": f"portrait:{portrait.id}:{i}",
                          "text": sentence})
    for row in await app.transcript.for_owner(owner.id):
        if row.kind is RowKind.COMPACTION:
            items.append({"layer": "continuity", "id": f"row:{row.id}", "text": row.content,
                          "source": row.source})
    for e in await app.episodes.for_owner(owner.id, live_only=False):
        items.append({"layer": "episode" if e.level == 0 else "rollup", "id": f"episode:{e.id}",
                      "text": e.summary, "source": e.source, "method": e.method,
                      "status": "live" if e.live else "tombstoned"})
    return items


def _others(person: Person, cast: Sequence[Person]) -> set[str]:
    """The distinctive words of everyone else's truth: their names and planted values (not
    their traps' words: those are common words, and a trap's city is caught anyway as a name
    the person's sources lack)."""
    out: set[str] = set()
    for other in cast:
        if other is person:
            continue
        out.add(other.name.lower())
        for p in other.planted:
            out.update(w for w in p.words if len(w) >= 4)
    return out


def _keeps(item: dict[str, Any]) -> bool:
    """Whether a stored item can count as keeping a planted fact: supported, or true but said
    once and stored as a habit (the fact is kept, in the wrong layer)."""
    return item["class"] == "supported" or item["reason"].startswith("a pattern from 1 ")


async def _recall(app: App, person: Person, owner: Owner, channel: Channel,
                  facts: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each planted fact: stored as a live fact, pattern or place that keeps it (its words in
    one, see `_keeps`), and brought back by turn-zero recall when the person asks its
    question (its line in the block)."""
    mine = [f["text"] for f in facts if f["layer"] in ("fact", "pattern", "geo")
            and f.get("status") == "live" and _keeps(f)]
    out = []
    for p in person.planted:
        outcome = await recall_once(app, channel, owner, p.question)
        text = outcome.block or ""
        block = " ".join(words(text))
        out.append({"person": person.key, "key": p.key, "habit": p.habit,
                    "as_fact": any(has_words(t, p.words) for t in mine),
                    "turn_zero_line": " ".join(words(p.line)) in block,
                    "turn_zero_words": has_words(text, p.words),
                    "question": p.question})
    return out


async def _case_c(app: App, person: Person, owner: Owner, channel: Channel) -> dict[str, Any]:
    """Recall for "What is my job?" after the wrong reply: the person's line, the bot's."""
    outcome = await recall_once(app, channel, owner, "What is my job?")
    block = (outcome.block or "").lower()
    right, wrong = block.find("pharmacist"), block.find("software engineer")
    return {"block_has_person_line": right >= 0, "block_has_wrong_reply": wrong >= 0,
            "person_line_first": right >= 0 and (wrong < 0 or right < wrong),
            "block_tokens": outcome.tokens, "block": outcome.block or ""}


def _counts(items: Iterable[dict[str, Any]]) -> dict[str, Any]:
    by: dict[str, Counter[str]] = {layer: Counter() for layer in LAYERS}
    for item in items:
        by[item["layer"]][item["class"]] += 1
    out = {}
    for layer, c in by.items():
        n = sum(c.values())
        out[layer] = {"items": n, **{k: c[k] for k in CLASSES},
                      "unsupported_share": round(c["unsupported"] / n, 3) if n else None}
    return out


async def judge(app: App, cast: Sequence[Person], pages: Sequence[dict[str, str]]
                ) -> dict[str, Any]:
    """Classify every stored item of every person; recall; the cases."""
    echoes = echoes_of(app)
    page_texts = [" ".join(p.values()) for p in pages]
    items: list[dict[str, Any]] = []
    recall: list[dict[str, Any]] = []
    cases: dict[str, Any] = {}
    for person in cast:
        owner, channel = await app.processor.resolve(message(person, "", app.clock.now()))
        rows = [r for r in await app.transcript.for_owner(owner.id)
                if r.kind is RowKind.MESSAGE and r.channel_id == channel.id]
        own = [r.content for r in rows if r.role is Role.USER]
        truth = [p.line for p in person.planted if p.line not in own]  # each line once
        # A summary may date what it tells: the rows' days are among its sources.
        days = sorted({r.ts.strftime("%Y-%m-%d %d %B %A %Y") for r in rows})
        src = Sources.of(own + truth, [r.content for r in rows] + days, [person.name],
                         page_texts,
                         person.traps, _others(person, cast),
                         bot_lines=[r.content for r in rows if r.role is Role.ASSISTANT],
                         bot_name=app.settings.bot.name)
        mine = await stored(app, owner)
        for item in mine:
            verdict = classify(item["text"], item["layer"], src, echoes)
            item.update({"person": person.key, "class": verdict.cls, "reason": verdict.reason})
        items += mine
        recall += await _recall(app, person, owner, channel, mine)
        if "c" in person.cases:
            cases["c"] = await _case_c(app, person, owner, channel)
        if "a" in person.cases:
            cases["a"] = {"person": person.key, "by_layer": {
                k: v for k, v in _counts(mine).items() if v["items"]}}
    b = [p.key for p in cast if "b" in p.cases]
    cases["b"] = {"people": b, "crossed": [
        {k: i[k] for k in ("person", "layer", "id", "text", "reason")} for i in items
        if i["person"] in b and i["reason"].startswith("another person's")]}
    planted = len(recall)
    return {
        "people": [{"key": p.key, "name": p.name, "talk": p.talk, "cases": list(p.cases),
                    "planted": len(p.planted), "traps": len(p.traps)} for p in cast],
        "by_layer": _counts(items),
        "recall": {"planted": planted,
                   "as_fact": round(sum(r["as_fact"] for r in recall) / planted, 3)
                   if planted else None,
                   "turn_zero_line": round(sum(r["turn_zero_line"] for r in recall) / planted, 3)
                   if planted else None,
                   "rows": recall},
        "cases": cases,
        "targets": TARGETS,
        "items": items,
    }


def _share(v: float | None) -> str:
    return "–" if v is None else f"{v:.0%}"


def table(result: dict[str, Any]) -> str:
    """The per-layer table, recall and the cases, in markdown, beside the issue's targets."""
    lines = ["| layer | items | supported | unsupported | echo | unsupported share | "
             "target met |", "|---|---:|---:|---:|---:|---:|---|"]
    for layer, c in result["by_layer"].items():
        met = "–" if not c["items"] else (
            "yes" if c["echo"] == 0 and c["unsupported_share"] <= TARGETS["unsupported_share"]
            else "**no**")
        lines.append(f"| {layer} | {c['items']} | {c['supported']} | {c['unsupported']} | "
                     f"{c['echo']} | {_share(c['unsupported_share'])} | {met} |")
    r = result["recall"]
    cases = result["cases"]
    lines += ["", f"planted facts: {r['planted']}; recalled as a stored fact "
              f"{_share(r['as_fact'])} (target ≥ {TARGETS['recall']:.0%}); line brought back "
              f"by turn-zero recall {_share(r['turn_zero_line'])}"]
    if "a" in cases:
        a = cases["a"]["by_layer"]
        lines.append("case a (three ordinary messages, then every job): " + (", ".join(
            f"{k} {v['items']} ({v['unsupported']} unsupported, {v['echo']} echo)"
            for k, v in a.items()) or "nothing stored"))
    if "b" in cases and len(cases["b"]["people"]) > 1:
        lines.append(f"case b ({len(cases['b']['people'])} people in one memory): "
                     f"{len(cases['b']['crossed'])} items carry another person's truth")
    if "c" in cases:
        c = cases["c"]
        asks = [a for a in result.get("lived", {}).get("asks", [])
                if a["question"] == "What is my job?"]
        reply = asks[-1]["reply"] if asks else ""
        lines.append(f"case c (\"What is my job?\" after a wrong reply): recall block has the "
                     f"person's line {c['block_has_person_line']}, the wrong reply "
                     f"{c['block_has_wrong_reply']}, person's first {c['person_line_first']}; "
                     f"reply {reply[:80]!r} "
                     f"(names the job: {bool(asks and asks[-1]['answered'])})")
    return "\n".join(lines)
