"""`strata eval recall --lived` as an operator runs it: a real subprocess against the fake
OpenAI server, on a tiny conversation set written here (not LoCoMo) whose sessions are two
days apart, so the background jobs have gaps to run in."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import strata_env
from tests.fakes.openai_server import FakeOpenAI, Responder, last_user_text

ROOT = Path(__file__).parents[2]

TURNS = [
    # conversation A: two sessions, 2025-03-01 10:00 and two days later
    ("A", 1, "A:D1:1", "2025-03-01T10:00:00Z", "Alice", "user",
     "I finally baked sourdough bread today"),
    ("A", 1, "A:D1:2", "2025-03-01T10:00:30Z", "Bob", "assistant", "How long did it rise?"),
    ("A", 1, "A:D1:3", "2025-03-01T10:01:00Z", "Alice", "user",
     "My starter is named Clint and it doubled overnight"),
    ("A", 2, "A:D2:1", "2025-03-03T10:00:00Z", "Alice", "user",
     "I signed up for the Lisbon marathon"),
    ("A", 2, "A:D2:2", "2025-03-03T10:00:30Z", "Bob", "assistant", "Good luck with training"),
    ("A", 2, "A:D2:3", "2025-03-03T10:02:00Z", "Alice", "user",
     "The race is in October along the river"),
    # conversation B: one session
    ("B", 1, "B:D1:1", "2025-05-02T21:00:00Z", "Carol", "user",
     "Jupiter moons were visible through my telescope"),
    ("B", 1, "B:D1:2", "2025-05-02T21:00:30Z", "Dan", "assistant", "Which ones could you see?"),
    ("B", 1, "B:D1:3", "2025-05-02T21:01:00Z", "Carol", "user", "Io and Europa, both tiny dots"),
]
QUESTIONS = [
    {"conv": "A", "qid": "A:q0", "question": "starter named Clint doubled overnight",
     "category": "single_hop", "evidence": ["A:D1:3"], "asked_at": "2025-03-03T10:03:00Z"},
    {"conv": "A", "qid": "A:q1", "question": "Lisbon marathon", "category": "temporal",
     "evidence": ["A:D2:1"], "asked_at": "2025-03-03T10:03:00Z"},
    {"conv": "B", "qid": "B:q0", "question": "Jupiter moons visible through telescope",
     "category": "single_hop", "evidence": ["B:D1:1"], "asked_at": "2025-05-02T21:02:00Z"},
]


def write_data(folder: Path) -> tuple[Path, Path]:
    turns = folder / "turns.jsonl"
    turns.write_text("".join(
        json.dumps({"conv": c, "session": s, "turn_id": t, "ts": ts, "speaker": sp, "role": r,
                    "text": text}) + "\n"
        for c, s, t, ts, sp, r, text in TURNS))
    questions = folder / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return turns, questions


def run_lived(tmp_path: Path, env_base: dict[str, str], *extra: str,
              responder: Responder | None = None,
              ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], dict[str, Any]]:
    turns, questions = write_data(tmp_path)
    out, details = tmp_path / "report.json", tmp_path / "details.jsonl"
    # Wide hashed vectors, so the two conversations' words never look alike.
    with FakeOpenAI(dim=1024) as wide:
        wide.responder = responder
        env = dict(env_base, **strata_env(wide, tmp_path / "unused.db"))
        run = subprocess.run(
            [sys.executable, "-m", "strata.app.cli", "eval", "recall", "--turns", str(turns),
             "--questions", str(questions), "--budget", "200", "--abstention", "1", "--lived",
             "--no-progress", "--out", str(out), "--details", str(details), *extra],
            env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    rows = {r["qid"]: r for r in map(json.loads, details.read_text().splitlines())
            if not r["abstention"]}
    return run, json.loads(out.read_text()), rows


def test_lived_replay_runs_the_life_cycle_in_the_gaps(tmp_path: Path,
                                                      subprocess_env: dict[str, str]) -> None:
    run, report, rows = run_lived(tmp_path, subprocess_env)
    # The static report, plus what living left behind.
    assert {"questions", "overall", "by_category", "abstention"} <= set(report)
    storage = report["storage"]
    assert set(storage) == {"rows_ingested", "rows_kept", "episodes_live", "facts_live",
                            "db_bytes", "by_conversation"}
    assert storage["rows_ingested"] == len(TURNS)
    assert 0 < storage["rows_kept"] <= storage["rows_ingested"]
    assert storage["db_bytes"] > 0
    assert storage["facts_live"] == 0  # no model asked for facts
    assert set(storage["by_conversation"]) == {"A", "B"}
    assert storage["by_conversation"]["A"]["rows_ingested"] == 6
    # The extract job closed each of the three sessions once the person was idle.
    lived = report["lived"]
    assert lived["job_runs"]["extract:ok"] == 3
    assert storage["episodes_live"] >= 3
    assert lived["episode_methods"] == {"extractive": storage["episodes_live"]}
    # Decay at its real cadence, hourly once the idle gate opened: A's first session ends at
    # 10:01, the gate opens at 10:31, the first check after it (every 5 min from 10:00) is at
    # 10:35, then hourly until 09:35 two days later (48 runs); after the second session one
    # more at 10:35. B's only session: one run. Nothing ran during a session.
    assert lived["job_runs"]["decay:ok"] == 48 + 1 + 1
    assert lived["job_runs"].get("decay:error", 0) == 0
    # The output says how the memory was written without a model.
    assert "extractive fallbacks" in run.stdout and "facts: none" in run.stdout
    assert "rows kept" in run.stdout
    # After living through it, recall still finds the evidence.
    assert "A:D1:3" in rows["A:q0"]["cited"]
    assert "A:D2:1" in rows["A:q1"]["cited"]
    assert "B:D1:1" in rows["B:q0"]["cited"]


def fact_extractor(body: dict[str, Any]) -> str | None:
    """The fake model as a fact extractor: the starter's name when an excerpt has it."""
    prompt = last_user_text(body)
    if "KNOWN FACTS:" not in prompt:
        return None  # other calls get the fake's echo, which fits no schema
    facts = []
    for episode, excerpt in re.findall(r"EXCERPT episode=(\d+)[^\n]*\n(.*?)(?=\nEXCERPT|$)",
                                       prompt, re.S):
        if "Clint" in excerpt and "Clint" not in prompt.split("EXCERPT")[0]:  # not known yet
            facts.append({"kind": "user_specific", "text": "has a sourdough starter named Clint",
                          "attribute": "starter_name", "modality": "assertion",
                          "asserted_by_person": True, "evidence": "My starter is named Clint",
                          "episode": int(episode), "confidence": 0.9})
    return json.dumps({"facts": facts})


def test_lived_with_the_fake_chat_model_says_what_wrote_memory(
        tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    """`--episodes llm` against the fake model: its episode answers do not fit the schema, so
    episodes fall back to the extractive path, and the report says which method wrote them;
    fact extraction (a chat model is used) runs in the gaps and its fact is live at the end."""
    run, report, rows = run_lived(tmp_path, subprocess_env, "--episodes", "llm",
                                  responder=fact_extractor)
    lived, storage = report["lived"], report["storage"]
    assert "chat model" in lived["summaries"] and "extractive fallback" in lived["summaries"]
    assert sum(lived["episode_methods"].values()) == storage["episodes_live"] > 0
    assert lived["job_runs"]["extract:ok"] >= 3
    assert lived["job_runs"].get("extract:error", 0) == 0
    assert storage["by_conversation"]["A"]["facts_live"] == 1
    assert storage["by_conversation"]["B"]["facts_live"] == 0
    assert "summaries: chat model" in run.stdout
    assert "B:D1:1" in rows["B:q0"]["cited"]


def test_lived_refuses_consolidate(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    turns, questions = write_data(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "strata.app.cli", "eval", "recall", "--turns", str(turns),
         "--questions", str(questions), "--lived", "--consolidate"],
        env=subprocess_env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "--consolidate" in run.stderr and "Traceback" not in run.stderr
