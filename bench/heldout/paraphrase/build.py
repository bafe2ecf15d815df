"""Turn the hand-written conversations in `source/*.txt` into `turns.jsonl` and
`questions.jsonl` (the evaluation format `strata eval recall` reads).

The text of every turn and question is written by hand in the source files; this script only
numbers the turns, gives them timestamps and resolves the evidence labels to turn ids.

Source format: header lines `conv:`, `user:`, `assistant:`; a session starts with
`== YYYY-MM-DD HH:MM` (UTC); a turn is `U: text` or `A: text`, optionally labelled
`U #label #other: text`; after `== questions`, one question a line:
`? category | label,label (or -) | question | answer`.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
TURN = re.compile(r"^(U|A)((?:\s+#[\w-]+)*):\s?(.*)$")
SESSION = re.compile(r"^== (\d{4}-\d\d-\d\d \d\d:\d\d)$")
CATEGORIES = {"single_hop", "multi_hop", "temporal", "open_domain", "adversarial"}


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(path: Path) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    head: dict[str, str] = {}
    turns: list[dict[str, object]] = []
    questions: list[dict[str, object]] = []
    labels: dict[str, str] = {}
    session, index, clock = 0, 0, datetime.min.replace(tzinfo=UTC)
    in_questions = False
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.rstrip()
        if not line or line.startswith("//"):
            continue
        where = f"{path.name}:{n}"
        if line == "== questions":
            in_questions = True
            continue
        if in_questions:
            cat, ev, question, answer = (p.strip() for p in line.removeprefix("?").split("|"))
            if cat not in CATEGORIES:
                raise SystemExit(f"{where}: unknown category {cat!r}")
            ids = [] if ev == "-" else [labels[e.strip()] for e in ev.split(",")]
            questions.append({"conv": head["conv"], "qid": f"{head['conv']}:q{len(questions)}",
                              "question": question, "answer": answer, "category": cat,
                              "evidence": ids})
            continue
        if m := SESSION.match(line):
            session, index = session + 1, 0
            clock = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
            continue
        if m := TURN.match(line):
            index += 1
            text = m.group(3)
            turn_id = f"{head['conv']}:D{session}:{index}"
            for label in m.group(2).split():
                if label[1:] in labels:
                    raise SystemExit(f"{where}: label {label} used twice")
                labels[label[1:]] = turn_id
            role = "user" if m.group(1) == "U" else "assistant"
            turns.append({"conv": head["conv"], "session": session, "turn_id": turn_id,
                          "ts": _iso(clock), "speaker": head[role], "role": role,
                          "text": text})
            # Typing time: a pause that grows with the message, never more than four minutes.
            clock += timedelta(seconds=min(240, 20 + len(text) // 3))
            continue
        key, _, value = line.partition(":")
        if key not in ("conv", "user", "assistant"):
            raise SystemExit(f"{where}: cannot read {line!r}")
        head[key] = value.strip()
    asked = _iso(clock + timedelta(seconds=60))
    for q in questions:
        q["asked_at"] = asked
    return turns, questions


def main() -> int:
    turns: list[dict[str, object]] = []
    questions: list[dict[str, object]] = []
    for path in sorted((HERE / "source").glob("*.txt")):
        t, q = parse(path)
        turns += t
        questions += q
    for name, rows in (("turns.jsonl", turns), ("questions.jsonl", questions)):
        with open(HERE / name, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(turns)} turns, {len(questions)} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
