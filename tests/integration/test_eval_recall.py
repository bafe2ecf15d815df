"""`strata eval recall` as an operator runs it (in this process: `tests.cli_inprocess`) against
the fake embeddings, on two tiny conversations written here (not LoCoMo), with answers that can
be reasoned out."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli_inprocess import strata_in
from tests.conftest import strata_env
from tests.fakes.openai_server import FakeOpenAI

ROOT = Path(__file__).parents[2]

# Conversation A never uses a word of conversation B's questions, and B never one of A's.
TURNS_A = [
    ("A:D1:1", "2025-03-01T10:00:00Z", "Alice", "user", "I finally baked sourdough bread today"),
    ("A:D1:2", "2025-03-01T10:00:30Z", "Bob", "assistant", "Nice, how long did it rise?"),
    ("A:D1:3", "2025-03-01T10:01:00Z", "Alice", "user",
     "My starter is named Clint and it doubled overnight"),
    ("A:D1:4", "2025-03-01T10:01:30Z", "Bob", "assistant", "Clint sounds like a strong yeast"),
    ("A:D2:1", "2025-04-12T18:00:00Z", "Alice", "user", "I signed up for the Lisbon marathon"),
    ("A:D2:2", "2025-04-12T18:00:30Z", "Bob", "assistant", "Good luck with training"),
]
TURNS_B = [
    ("B:D1:1", "2025-05-02T21:00:00Z", "Carol", "user",
     "Jupiter moons were visible through my telescope"),
    ("B:D1:2", "2025-05-02T21:00:30Z", "Dan", "assistant", "Which ones could you see?"),
    ("B:D1:3", "2025-05-02T21:01:00Z", "Carol", "user", "Io and Europa, both tiny dots",
     "a photo of a telescope on a balcony"),
]
QUESTIONS = [
    # Its evidence row holds every word of the question: any working recall must cite it.
    {"conv": "A", "qid": "A:q0", "question": "starter named Clint doubled overnight",
     "category": "single_hop", "evidence": ["A:D1:3"], "asked_at": "2025-04-12T18:01:30Z",
     "answer": "It doubled overnight, the zeppelin"},
    {"conv": "A", "qid": "A:q1", "question": "Lisbon marathon", "category": "temporal",
     "evidence": ["A:D2:1"], "asked_at": "2025-04-12T18:01:30Z"},
    {"conv": "A", "qid": "A:q2", "question": "What did Bob bake?", "category": "adversarial",
     "evidence": ["A:D1:1"], "asked_at": "2025-04-12T18:01:30Z"},
    {"conv": "A", "qid": "A:q3", "question": "sourdough bread", "category": "open_domain",
     "evidence": [], "asked_at": "2025-04-12T18:01:30Z"},
    {"conv": "B", "qid": "B:q0", "question": "Jupiter moons visible through telescope",
     "category": "single_hop", "evidence": ["B:D1:1"], "asked_at": "2025-05-02T21:02:00Z"},
]


def write_data(folder: Path) -> tuple[Path, Path]:
    turns = folder / "turns.jsonl"
    with turns.open("w") as fh:
        for conv, rows in (("A", TURNS_A), ("B", TURNS_B)):
            for tid, ts, speaker, role, text, *caption in rows:
                rec: dict[str, Any] = {"conv": conv, "session": 1, "turn_id": tid, "ts": ts,
                                       "speaker": speaker, "role": role, "text": text}
                if caption:
                    rec["img_caption"] = caption[0]
                fh.write(json.dumps(rec) + "\n")
    questions = folder / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return turns, questions


def strata(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return strata_in(args, env)  # the command line in this process: no start-up per command


def test_eval_recall_report(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    turns, questions = write_data(tmp_path)
    out, details = tmp_path / "report.json", tmp_path / "details.jsonl"
    # Wide hashed vectors: at the suite's 64 dimensions, words of unrelated texts share
    # buckets often enough to look related; at 1024 these texts' words never collide.
    with FakeOpenAI(dim=1024) as wide:
        env = dict(subprocess_env, **strata_env(wide, tmp_path / "unused.db"))
        # A recall setting given by the environment (here its default) is part of what made
        # the numbers: the report names it.
        env["STRATA_RECALL_TRIM_AFTER"] = "6"
        run = strata(["eval", "recall", "--turns", str(turns), "--questions", str(questions),
                      "--budget", "200", "--abstention", "1", "--out", str(out),
                      "--details", str(details)], env)
    assert run.returncode == 0, run.stderr
    assert "overall" in run.stdout and "false injection rate" in run.stdout

    report = json.loads(out.read_text())
    assert set(report) == {"questions", "budget_tokens", "overall", "by_category",
                           "by_conversation", "abstention", "command", "embedder",
                           "settings_env"}
    assert report["settings_env"] == {"STRATA_RECALL_TRIM_AFTER": "6"}
    # Each conversation on its own: its own questions, and its foreign one got nothing.
    assert set(report["by_conversation"]) == {"A", "B"}
    assert sum(m["questions"] for m in report["by_conversation"].values()) == 5
    assert all(m["false_injection_rate"] == 0.0 for m in report["by_conversation"].values())
    assert report["command"].startswith("STRATA_RECALL_TRIM_AFTER=6 strata eval recall --turns ")
    assert report["questions"] == 5 and report["budget_tokens"] == 200
    keys = {"evidence_recall", "hit_rate", "mean_injected_tokens", "empty_rate",
            "latency_ms_p50", "latency_ms_p95", "answer_coverage"}
    assert set(report["overall"]) == keys
    assert set(report["by_category"]) == {"single_hop", "temporal", "adversarial", "open_domain"}
    assert all(set(m) == keys for m in report["by_category"].values())

    rows = {r["qid"] + ("/abst" if r["abstention"] else ""): r
            for r in map(json.loads, details.read_text().splitlines())}
    assert len(rows) == 7  # five own questions, one foreign question asked of each conversation
    assert "A:D1:3" in rows["A:q0"]["cited"]
    assert "B:D1:1" in rows["B:q0"]["cited"]
    # Nothing of one conversation's words is in the other's store: nothing may be injected.
    foreign = [r for r in rows.values() if r["abstention"]]
    assert {r["qid"][0] for r in foreign} == {"A", "B"}
    assert all(r["tokens"] == 0 and r["cited"] == [] for r in foreign)
    assert report["abstention"] == {"n": 2, "false_injection_rate": 0.0}

    # The overall numbers are the scored questions' (A:q0, A:q1, B:q0; not the adversarial
    # one, not the one without evidence), recomputed here from the per-question lines.
    scored = [rows[q] for q in ("A:q0", "A:q1", "B:q0")]
    share = [len(set(r["cited"]) & set(r["evidence"])) / len(r["evidence"]) for r in scored]
    assert report["overall"]["evidence_recall"] == round(sum(share) / 3, 4)
    assert report["overall"]["hit_rate"] == round(sum(s > 0 for s in share) / 3, 4)
    own = [r for r in rows.values() if not r["abstention"]]
    assert report["overall"]["mean_injected_tokens"] == round(
        sum(r["tokens"] for r in own) / 5, 2)
    assert 0 < report["overall"]["mean_injected_tokens"] <= 200
    assert all(r["tokens"] <= 200 for r in own)
    # Every line carries the exact block; what it cites is quoted in it.
    assert all(r["injected"] == "" for r in foreign)
    assert "Clint and it doubled overnight" in rows["A:q0"]["injected"]
    assert rows["A:q0"]["tokens"] >= -(-len(rows["A:q0"]["injected"]) // 4)
    # Answer coverage: "doubled" and "overnight" are in the block, "zeppelin" is not; only
    # A:q0 has an answer with content words, so it is the overall mean as well.
    assert rows["A:q0"]["answer_coverage"] == round(2 / 3, 4)
    assert report["overall"]["answer_coverage"] == round(2 / 3, 4)
    assert report["by_category"]["single_hop"]["answer_coverage"] == round(2 / 3, 4)


def test_eval_recall_on_a_subset_of_conversations(tmp_path: Path,
                                                  subprocess_env: dict[str, str]) -> None:
    turns, questions = write_data(tmp_path)
    details = tmp_path / "details.jsonl"
    with FakeOpenAI(dim=1024) as wide:
        env = dict(subprocess_env, **strata_env(wide, tmp_path / "unused.db"))
        run = strata(["eval", "recall", "--turns", str(turns), "--questions", str(questions),
                      "--conversations", "1", "--abstention", "1", "--no-progress",
                      "--details", str(details)], env)
        assert run.returncode == 0, run.stderr
        lines = [json.loads(x) for x in details.read_text().splitlines()]
        assert {r["conv"] for r in lines} == {"B"} and len(lines) == 2
        bad = strata(["eval", "recall", "--turns", str(turns), "--questions", str(questions),
                      "--conversations", "2"], env)
    assert bad.returncode == 2 and "no conversation 2" in bad.stderr


def test_eval_recall_reports_the_fts5_baseline_beside_recall(
        tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    turns, questions = write_data(tmp_path)
    out = tmp_path / "report.json"
    with FakeOpenAI(dim=1024) as wide:
        env = dict(subprocess_env, **strata_env(wide, tmp_path / "unused.db"))
        run = strata(["eval", "recall", "--turns", str(turns), "--questions", str(questions),
                      "--budget", "200", "--abstention", "1", "--no-progress",
                      "--baseline", "fts5", "--out", str(out)], env)
        assert run.returncode == 0, run.stderr
        lived = strata(["eval", "recall", "--turns", str(turns), "--questions", str(questions),
                        "--baseline", "fts5", "--lived"], env)
    assert lived.returncode != 0 and "--baseline" in lived.stderr
    report = json.loads(out.read_text())
    base = report["baseline"]
    assert base["method"] == "fts5"
    # The same questions of the same conversations, counted the same way.
    assert base["questions"] == report["questions"] == 5
    assert set(base["by_conversation"]) == set(report["by_conversation"]) == {"A", "B"}
    # Every scored question's evidence row holds the question's words: keywords find it all.
    assert base["overall"]["evidence_recall"] == 1.0
    assert base["by_conversation"]["B"]["evidence_recall"] == 1.0
    # Its block is priced with a date header per row and stays within the budget.
    assert 0 < base["overall"]["mean_injected_tokens"] <= 200
    # The foreign questions share no word with the other conversation: nothing is found.
    assert base["abstention"]["false_injection_rate"] == 0.0
    # The printed table names the baseline and gives its recall per conversation.
    head = next(line for line in run.stdout.splitlines() if line.startswith("conversation"))
    assert head.rstrip().endswith("fts5")
    row_b = next(line for line in run.stdout.splitlines() if line.startswith("B "))
    assert row_b.split()[-1] == "1.000"


def test_eval_recall_after_a_consolidate_and_decay_pass(tmp_path: Path,
                                                       subprocess_env: dict[str, str]) -> None:
    """`--consolidate` runs the background life cycle before asking; the evidence survives
    it (pruning keeps rows that live episodes cite)."""
    turns, questions = write_data(tmp_path)
    details = tmp_path / "details.jsonl"
    with FakeOpenAI(dim=1024) as wide:
        env = dict(subprocess_env, **strata_env(wide, tmp_path / "unused.db"))
        run = strata(["eval", "recall", "--turns", str(turns), "--questions", str(questions),
                      "--budget", "200", "--abstention", "1", "--consolidate", "--no-progress",
                      "--details", str(details)], env)
    assert run.returncode == 0, run.stderr
    rows = {r["qid"]: r for r in map(json.loads, details.read_text().splitlines())
            if not r["abstention"]}
    assert "A:D1:3" in rows["A:q0"]["cited"]
    assert "B:D1:1" in rows["B:q0"]["cited"]


def test_eval_recall_reports_bad_input(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    turns, questions = write_data(tmp_path)
    questions.write_text(questions.read_text() + '{"conv": "A", "qid": "x"}\n')
    run = strata(["eval", "recall", "--turns", str(turns), "--questions", str(questions)],
                 subprocess_env)
    assert run.returncode == 2
    assert f"{questions}:6:" in run.stderr and "Traceback" not in run.stderr
    turns.write_text(turns.read_text().replace('"role": "user"', '"role": "bot"', 1))
    run = strata(["eval", "recall", "--turns", str(turns), "--questions", str(questions)],
                 subprocess_env)
    assert run.returncode == 2 and f"{turns}:1: role" in run.stderr


@pytest.mark.postgres_only  # both engines in one test: once, in the PostgreSQL pass
def test_eval_recall_on_postgresql_cites_what_sqlite_cites(
        tmp_path: Path, subprocess_env: dict[str, str], pg_url: str) -> None:
    """`--db-url`: each conversation in a fresh database on the server, dropped afterwards;
    the same questions cite the same turns as on SQLite."""
    import psycopg

    turns, questions = write_data(tmp_path)
    cited: dict[str, dict[str, list[str]]] = {}
    with FakeOpenAI(dim=1024) as wide:
        env = dict(subprocess_env, **strata_env(wide, tmp_path / "unused.db"))
        for engine, extra in (("sqlite", []), ("postgres", ["--db-url", pg_url])):
            details = tmp_path / f"{engine}.jsonl"
            run = strata(["eval", "recall", "--turns", str(turns), "--questions",
                          str(questions), "--budget", "200", "--abstention", "1",
                          "--no-progress", "--details", str(details), *extra], env)
            assert run.returncode == 0, run.stderr
            cited[engine] = {r["qid"] + ("/abst" if r["abstention"] else ""): r["cited"]
                             for r in map(json.loads, details.read_text().splitlines())}
        bad = strata(["eval", "recall", "--turns", str(turns), "--questions", str(questions),
                      "--db-url", "/tmp/x.db"], env)
    assert bad.returncode == 2 and "not a postgresql:// URL" in bad.stderr
    assert "A:D1:3" in cited["postgres"]["A:q0"] and "B:D1:1" in cited["postgres"]["B:q0"]
    assert cited["postgres"] == cited["sqlite"]
    with psycopg.connect(pg_url) as conn:
        left = conn.execute("SELECT count(*) FROM pg_database WHERE datname LIKE 'strata_eval%'"
                            ).fetchone()
    assert left == (0,)


async def test_eval_stops_when_a_question_gets_no_vector(
        fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """A question whose embedding fails (or would take longer than recall's own limit on a
    busy embedder) is not silently measured as keyword-only recall: the eval stops and says
    why, and a slow embedder gets the eval's own generous limit instead of recall's 10 s."""
    from strata.app.compose import App
    from strata.core.clock import ManualClock
    from strata.core.config import load_settings
    from strata.core.errors import StrataError
    from strata.core.types import ChannelKind
    from strata.evaluation.recall import (
        QUERY_EMBED_SECONDS,
        EvalOptions,
        _settings_for,
        recall_once,
    )

    settings = _settings_for(load_settings(None, env=strata_env(fake_openai, tmp_path / "x.db")),
                             str(tmp_path / "eval.db"), EvalOptions(), "Bob")
    assert settings.recall.query_embed_seconds == QUERY_EMBED_SECONDS
    clock = ManualClock()
    app = await App.create(settings, clock=clock)
    try:
        person = await app.persons.get_or_create("eval:A", "Alice", clock.now())
        channel = await app.channels.get_or_create(
            platform="eval", room_ref="A", owner_id=person.id, kind=ChannelKind.PRIVATE,
            source="user", now=clock.now(), name="A")
        fine = await recall_once(app, channel, person, "sourdough bread")
        assert fine.block is None  # an empty memory: nothing to find, and no error
        fake_openai.fail_next(status=400, path="embeddings")
        with pytest.raises(StrataError, match="no vector for the question 'sourdough bread'"):
            await recall_once(app, channel, person, "sourdough bread")
    finally:
        await app.close()


def test_eval_recall_with_the_assistant_as_the_bot(tmp_path: Path,
                                                   subprocess_env: dict[str, str]) -> None:
    """`--assistant-is-bot`: a person-and-bot chat (such as bench/heldout/paraphrase) is asked
    as recall runs in a real chat, where the bot's replies are not evidence about the person."""
    turns, _ = write_data(tmp_path)
    questions = tmp_path / "bot_questions.jsonl"
    # Only the assistant's reply A:D1:4 holds these words.
    questions.write_text(json.dumps(
        {"conv": "A", "qid": "A:q0", "question": "strong yeast", "category": "single_hop",
         "evidence": ["A:D1:4"], "asked_at": "2025-04-12T18:01:30Z"}) + "\n")
    cited: dict[bool, list[str]] = {}
    with FakeOpenAI(dim=1024) as wide:
        env = dict(subprocess_env, **strata_env(wide, tmp_path / "unused.db"))
        for bot in (False, True):
            out = tmp_path / f"bot_{bot}.json"
            details = tmp_path / f"bot_{bot}.jsonl"
            run = strata(["eval", "recall", "--turns", str(turns), "--questions",
                          str(questions), "--conversations", "0", "--abstention", "0",
                          "--no-progress", "--out", str(out), "--details", str(details),
                          *(["--assistant-is-bot"] if bot else [])], env)
            assert run.returncode == 0, run.stderr
            cited[bot] = json.loads(details.read_text().splitlines()[0])["cited"]
            if bot:
                assert "--assistant-is-bot" in json.loads(out.read_text())["command"]
        lived = strata(["eval", "recall", "--turns", str(turns), "--questions", str(questions),
                        "--assistant-is-bot", "--lived"], env)
    assert lived.returncode != 0 and "--assistant-is-bot" in lived.stderr
    # By default the assistant side is a person, whose words are evidence; as the bot, its
    # reply is never quoted.
    assert "A:D1:4" in cited[False]
    assert "A:D1:4" not in cited[True]


def test_eval_recall_with_the_hypothetical_line_keeps_the_lines(
        tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    """`--hypothetical FILE`: the chat model's line for each question that asks something is
    kept in FILE, so a rerun asks the model nothing; a FILE that is no such map is refused."""
    turns, questions = write_data(tmp_path)
    lines = tmp_path / "lines.json"
    args = ["eval", "recall", "--turns", str(turns), "--questions", str(questions),
            "--abstention", "2", "--no-progress", "--hypothetical", str(lines),
            "--out", str(tmp_path / "report.json")]
    with FakeOpenAI(dim=1024) as wide:
        env = dict(subprocess_env, **strata_env(wide, tmp_path / "unused.db"),
                   STRATA_RECALL_HYPOTHETICAL_ALWAYS="true")
        wide.reply("Bob baked a lemon cake.")
        first = strata(args, env)
        assert first.returncode == 0, first.stderr
        assert len(wide.chat_requests()) == 1  # one question asks: "What did Bob bake?"
        wide.clear()
        again = strata(args, env)
        assert again.returncode == 0, again.stderr
        assert wide.chat_requests() == []  # every line came from the file
        assert json.loads(lines.read_text()) == {"What did Bob bake?": "Bob baked a lemon cake."}
        lines.write_text('["not", "a", "map"]')
        bad = strata(args, env)
    assert json.loads((tmp_path / "report.json").read_text())["questions"] == 5
    assert bad.returncode != 0 and "--hypothetical" in bad.stderr
