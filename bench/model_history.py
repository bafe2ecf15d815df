"""What the chat history shown to the model does to the embedded model's replies.

    python -m bench.model_history [--samples 10] [--out FILE]

Fixed conversations, each prompted twice with the real prompt code, and answered
`--samples` times (seeds 1..N, the replies' own sampling) by the embedded default model:

- `job`: the person said "I'm a pharmacist"; the bot once answered "What is my job?" wrongly;
  they ask again, with turn-zero recall holding their line. Counted: replies naming the job,
  replies repeating the wrong answer.
- `reminder`: a reminder was set from the person's words (code wrote the confirmation); the
  person then says "I work as a pharmacist". Counted: replies copying the confirmation's form
  ("Reminder #1 set for …") and replies bringing up a reminder nobody asked about.
- `voice`: the quick start: "hi, I'm Dana and I work as a nurse at the city hospital", then
  "what is my job?". Counted: replies naming the job, replies in the person's voice ("I am a
  nurse…", "Dana: I work…"), replies told to the person ("You work…").
- `identity`: the same line, then "who are you?". Counted: replies where the bot names itself
  as the person ("I'm Dana, a warm attentive companion…"), and as itself ("I'm Strata").

`after` replies are also counted as sent, after the reply checks (`checked`: the voice of
`strata.bot.reply_voice` for a question about the person, and `strata.bot.reply_identity`).

`before` is the prompt as it was: every message of the history, the ambient snapshot with no
heading. `after` is `strata.bot.history_view` and the framed snapshot, as turns now build it.
Writes bench/results/model_history.json (replies, counts, the load average).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from strata.bot.embedded import model_endpoints
from strata.bot.history_view import model_history
from strata.bot.prompt import AMBIENT_HEADING, MEMORY_PREAMBLE, PromptParts, build_messages
from strata.bot.reply_checks import check_reply
from strata.bot.reply_identity import Identity
from strata.bot.reply_voice import voice_for
from strata.core.config import default_db_path, load_settings
from strata.core.types import Role, RowKind, TranscriptRow
from strata.evaluation.recall import write_json

RESULTS = Path(__file__).parent / "results"
T0 = datetime(2026, 3, 9, 18, 0, tzinfo=UTC)
PERSONA = load_settings(None).bot.persona
WRONG = "My job is to help people as a software engineer at a bank."
AMBIENT = ("Current local time for Ana: Monday 09 March 2026, 18:04 (UTC).\n"
           "They last wrote 1 minute ago (before this conversation turn).")
RECALLED = ("From the private chat on console:\n- since 2026-03-02 — fact #1 (user_specific):\n"
            "  > Is a pharmacist (job)\n- 2026-03-02:\n"
            "  > Ana: I'm a pharmacist, mostly night shifts at the hospital.")
CONFIRMED = ("Reminder #1 set for Mon 9 Mar 18:06 (UTC): stretch. /reminders lists your "
             "reminders.")
DANA = "hi, I'm Dana and I work as a nurse at the city hospital"
# A claim in the person's voice ("I am a nurse", "Ana: I'm a pharmacist") and one told to them.
FIRST_PERSON = r"(?:^|[.!?]\s+|:\s*)(?:as of [^,]+,\s*)?(?:I am|I'm|I work|My job)\b"
TOLD = r"\b(?:you are|you're|you work|your job)\b"
CALL = json.dumps([{"id": "words-0a1b2c3d4e5f", "name": "set_reminder",
                    "arguments": json.dumps({"text": "stretch", "in_minutes": 2.0})}])


def _rows(*said: tuple[Role, RowKind, str, str]) -> list[TranscriptRow]:
    return [TranscriptRow(i, 1, 1, 1 if role is Role.USER else None, T0, "user", role, kind,
                          text, turn) for i, (role, kind, text, turn) in enumerate(said, 1)]


U, A, M = Role.USER, Role.ASSISTANT, RowKind.MESSAGE
SCENARIOS: dict[str, dict[str, Any]] = {
    "job": {
        "rows": _rows((U, M, "Did my Wednesday run by the canal again.", "t1"),
                      (A, M, "Nice, the canal is a lovely route.", "t1"),
                      (U, M, "Mum always says 'you should have been a dentist like me'.", "t2"),
                      (A, M, "Mums have opinions! Do you like your work?", "t2"),
                      (U, M, "What is my job?", "t3"), (A, M, WRONG, "t3")),
        "ambient": AMBIENT, "recalled": RECALLED, "message": "What is my job?",
        "name": "Ana",
        "count": {"named": r"pharmacist", "wrong": r"software|bank", "as_them": FIRST_PERSON,
                  "told": TOLD}},
    "reminder": {
        "rows": _rows((U, M, "remind me in 2 minutes to stretch", "t1"),
                      (A, RowKind.TOOL_CALL, CALL, "t1"),
                      (Role.TOOL, RowKind.TOOL_RESULT, "ok: reminder #1 set", "t1"),
                      (A, M, CONFIRMED, "t1")),
        "ambient": AMBIENT + "\nUpcoming reminders and scheduled prompts:\n- #1 in 2 minutes: "
                             "stretch",
        "recalled": None, "message": "I work as a pharmacist",
        "count": {"copied_form": r"reminder\s*#\s*\d+\s+set", "brings_up": r"remind|stretch"}},
    "voice": {
        "rows": _rows((U, M, DANA, "t1"),
                      (A, M, "Hi Dana! It looks like you're working at the city hospital. Can you "
                             "tell me more about yourself?", "t1")),
        "ambient": AMBIENT.replace("Ana", "Dana"),
        "recalled": f"From the private chat on console:\n- 2026-03-09:\n  > Dana: {DANA}",
        "message": "what is my job?", "name": "Dana",
        "count": {"named": r"nurse", "as_them": FIRST_PERSON, "told": TOLD}},
    "identity": {
        "rows": _rows((U, M, DANA, "t1"),
                      (A, M, "Hi Dana! It looks like you're working at the city hospital. Can you "
                             "tell me more about yourself?", "t1")),
        "ambient": AMBIENT.replace("Ana", "Dana"), "recalled": None,
        "message": "who are you?", "name": "Dana",
        "count": {"as_person": r"\b(?:I'm|I am|my name is|call me)\s+Dana\b(?!'s)",
                  "as_itself": r"\b(?:I'm|I am|my name is|call me)\s+Strata\b"}},
}


def prompt(s: dict[str, Any], variant: str) -> list[dict[str, Any]]:
    after = variant == "after"
    rows = model_history(s["rows"], recall_on=s["recalled"] is not None) if after else s["rows"]
    parts = PromptParts(persona=PERSONA, message=s["message"], history=rows,
                        ambient=s["ambient"], recalled=s["recalled"])
    messages = [m.to_api() for m in build_messages(parts, history_tokens=3000)]
    if not after:  # the snapshot as it was, with no heading
        for m in messages:
            m["content"] = (m.get("content") or "").replace(AMBIENT_HEADING + "\n", "")
    return messages


def _counts(s: dict[str, Any], replies: list[str]) -> dict[str, int]:
    return {k: sum(bool(re.search(p, r, re.I)) for r in replies) for k, p in s["count"].items()}


def _checked(s: dict[str, Any], variant: str, reply: str) -> str:
    """The reply as a turn sends it: after the reply checks, with the voice of a question about
    the person (the person's words are what the prompt carried of them)."""
    said = "\n".join(m["content"] or "" for m in prompt(s, variant)
                     if m["role"] == "user" or MEMORY_PREAMBLE in (m["content"] or ""))
    voice = voice_for(s["message"], said, s.get("name", ""))
    return check_reply(reply, (), [PERSONA], asked=s["message"], voice=voice,
                       identity=Identity.of(s.get("name", ""), "Strata")).text


async def run(samples: int) -> dict[str, Any]:
    settings = load_settings(None)
    cache = default_db_path(os.environ).parent / "models"
    out: dict[str, Any] = {}
    async with model_endpoints(settings, cache_dir=cache, notice=print) as eff, \
            httpx.AsyncClient(timeout=600) as client:
        url = eff.llm.base_url.rstrip("/") + "/chat/completions"
        for name, s in SCENARIOS.items():
            for variant in ("before", "after"):
                replies = []
                for seed in range(1, samples + 1):
                    resp = await client.post(url, json={
                        "model": eff.llm.model, "messages": prompt(s, variant),
                        "max_tokens": 120, "seed": seed})
                    replies.append(resp.json()["choices"][0]["message"]["content"])
                    print(f"{name} {variant} {seed}: {replies[-1][:90]!r}", flush=True)
                out[f"{name}:{variant}"] = {"counts": _counts(s, replies), "replies": replies}
                if variant == "after":
                    sent = [_checked(s, variant, r) for r in replies]
                    out[f"{name}:checked"] = {"counts": _counts(s, sent), "replies": sent}
        out["model"] = eff.llm.model
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--out", type=Path, default=RESULTS / "model_history.json")
    args = ap.parse_args(argv)
    started = time.monotonic()
    result = asyncio.run(run(args.samples))
    result.update(samples=args.samples, seconds=round(time.monotonic() - started, 1),
                  load_average=os.getloadavg(),
                  command="python -m bench.model_history " + " ".join(argv or sys.argv[1:]))
    write_json(args.out, result)
    for key, value in result.items():
        if isinstance(value, dict) and "counts" in value:
            print(f"{key:<18} {value['counts']} of {args.samples}")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
