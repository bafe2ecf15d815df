"""Which embedded chat model is the default: each installed candidate is started exactly as
`strata chat` starts it (`strata.bot.weights`, `strata.bot.embedded`, one thread, a 4,096-token
window) and asked the same probes through Strata's own client. Writes
bench/results/model_choice.json.

    python -m bench.model_choice                       # every candidate whose weights are installed
    python -m bench.model_choice --models qwen2.5-coder-0.5b

Probes: two memory questions answered from recalled notes in the system prompt (checked for
the right name / place), an open question (checked for a loop: a repeated 6-word run), fact
extraction under a JSON schema (is it valid, how many facts), a summary of a dated dialogue
(how many of its names, places, dates and numbers it keeps), and a 1,200-token prompt read
from scratch and then again from the server's prompt cache (the first reply's cost). Timings
depend on the machine's load; the file records the load average at the start.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from strata.bot.embedded import EMBEDDED_CONTEXT, EmbeddedModels
from strata.bot.llm import OpenAIChatModel
from strata.bot.weights import SPECS, installed, open_weights
from strata.core.model_json import read_model_json
from strata.core.types import ChatMessage

OUT = Path(__file__).parent / "results" / "model_choice.json"
PERSONA = ("You are Strata, a warm, attentive companion who remembers what people tell you. "
           "Answer briefly and naturally. Never invent memories.")
NOTES = ("Things you may remember about this person follow, as quoted data with their dates.\n"
         "> [2026-11-02] I adopted a beagle called Pepper last week.\n"
         "> [2026-11-20] My sister Maya is visiting from Porto on December 12.")
QUESTIONS = [("What's my dog's name?", "Pepper"),
             ("When does my sister come, and from where?", "Porto")]
OPEN = "Tell me about the history of bread in a few sentences."
DIALOGUE = ("Caroline: On 8 May we went camping at Lake Tahoe with the kids.\n"
            "Melanie: Nice! I took Oliver to the science museum on Saturday, he loved the "
            "dinosaurs.\nCaroline: I start swimming lessons next Tuesday, 3 times a week.")
ENTITIES = ["Caroline", "Melanie", "Oliver", "Lake Tahoe", "8 May", "Saturday", "Tuesday", "3"]
FACTS_TEXT = ("I moved to Lyon in March and I'm vegetarian. My friend Tom loves skiing. "
              "Maybe I'll learn Japanese someday?")


class Fact(BaseModel):
    kind: str
    text: str


class Facts(BaseModel):
    facts: list[Fact]


def _loops(text: str, n: int = 6) -> bool:
    words = text.lower().split()
    runs = [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]
    return len(runs) != len(set(runs))


async def _probe(chat: OpenAIChatModel) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for question, want in QUESTIONS:
        started = time.monotonic()
        reply = await chat.complete([ChatMessage("system", PERSONA + "\n\n" + NOTES),
                                     ChatMessage("user", question)], max_tokens=80)
        out[question] = {"seconds": round(time.monotonic() - started, 1), "text": reply.text,
                         "right": want in reply.text}
    reply = await chat.complete([ChatMessage("system", PERSONA), ChatMessage("user", OPEN)],
                                max_tokens=200)
    out["open_question"] = {"text": reply.text, "loops": _loops(reply.text)}
    reply = await chat.complete(
        [ChatMessage("system", "List the durable facts the user states about themselves, one "
                               "per fact. Skip hypotheticals, questions and other people."),
         ChatMessage("user", FACTS_TEXT)], max_tokens=200, schema=Facts)
    facts = read_model_json(reply.text, Facts).value
    out["facts"] = {"text": reply.text, "valid": facts is not None,
                    "count": len(facts.facts) if facts else 0, "expected": 2}
    reply = await chat.complete(
        [ChatMessage("system", "Summarise this conversation in 2-3 sentences, keeping names, "
                               "places, dates and numbers."),
         ChatMessage("user", DIALOGUE)], max_tokens=150)
    kept = [e for e in ENTITIES if re.search(rf"\b{re.escape(e)}\b", reply.text)]
    out["summary"] = {"text": reply.text, "entities_kept": f"{len(kept)}/{len(ENTITIES)}"}
    long = " ".join(f"Line {i}: Alice talked about her garden, her dog Pepper and a trip to "
                    "Porto." for i in range(60))
    for attempt in ("cold", "cached"):
        started = time.monotonic()
        reply = await chat.complete([ChatMessage("system", PERSONA),
                                     ChatMessage("user", long + " Summarise in one sentence.")],
                                    max_tokens=20)
        out[f"long_prompt_{attempt}"] = {"seconds": round(time.monotonic() - started, 1),
                                         "prompt_tokens": reply.usage.prompt_tokens}
    return out


async def measure(name: str, cache: Path) -> dict[str, Any]:
    spec = SPECS[name]
    started = time.monotonic()
    models = EmbeddedModels()
    gguf = models.hold(open_weights(spec, cache))
    try:
        end = models.start_chat(gguf, EMBEDDED_CONTEXT)
        loaded = round(time.monotonic() - started, 1)
        chat = OpenAIChatModel(base_url=end.base_url, model=name, timeout=600, max_retries=0)
        try:
            probes = await _probe(chat)
        finally:
            await chat.close()
    finally:
        models.close()
    return {"model": spec.title, "size_bytes": spec.size, "licence": spec.licence,
            "load_seconds": loaded, **probes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(SPECS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    names = [n for n in args.models.split(",") if n in SPECS and installed(SPECS[n])]
    cache = Path(tempfile.gettempdir()) / "strata-model-choice"
    report = {"load_average": os.getloadavg(), "threads": 1, "context": EMBEDDED_CONTEXT,
              "command": "python -m bench.model_choice --models " + ",".join(names),
              "results": {n: asyncio.run(measure(n, cache)) for n in names}}
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
