"""`strata` as a user runs it: real HTTP, a real database; a real subprocess where the process
is the point (a closed pipe, SIGKILL, where the files land), `main(argv)` in this process for
the rest (`tests.cli_inprocess`: a subprocess costs seconds of start-up each)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.cli_inprocess import strata_in
from tests.fakes.openai_server import FakeOpenAI

ROOT = Path(__file__).parents[2]


def strata(args: list[str], env: dict[str, str], stdin: str = "",
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strata.app.cli", *args], input=stdin, env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_piped_chat_history_and_export(fake_openai: FakeOpenAI,
                                       subprocess_env: dict[str, str]) -> None:
    first = strata_in(["chat", "--user", "alice"], subprocess_env, "one\ntwo\nthree\n")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == ["You said: one", "You said: two", "You said: three"]

    second = strata_in(["chat", "--user", "alice"], subprocess_env, "four\n")
    assert second.returncode == 0, second.stderr
    sent = [m["content"] for m in fake_openai.chat_requests()[-1]["messages"]]
    for earlier in ("one", "two", "three", "You said: one", "You said: three"):
        assert earlier in sent
    assert sent[-1] == "four"

    export = strata_in(["memory", "export", "--user", "alice"], subprocess_env)
    assert export.returncode == 0, export.stderr
    data = json.loads(export.stdout)
    assert [r["content"] for r in data["transcript"] if r["role"] == "user"] == [
        "one", "two", "three", "four"]

    strata_in(["chat", "--user", "bob"], subprocess_env, "hi\n")
    bob = json.loads(strata_in(["memory", "export", "--user", "bob"], subprocess_env).stdout)
    assert "one" not in [r["content"] for r in bob["transcript"]]

    show = strata_in(["memory", "show", "--user", "alice"], subprocess_env)
    assert show.returncode == 0 and "transcript rows: 8" in show.stdout


def test_endpoint_stopped_gives_honest_reply(subprocess_env: dict[str, str]) -> None:
    env = dict(subprocess_env, STRATA_LLM_BASE_URL="http://127.0.0.1:9/v1")
    out = strata_in(["chat", "--user", "carol"], env, "are you up?\n")
    assert out.returncode == 0, out.stderr
    assert "can't reach my language model" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr
    env_ok = dict(subprocess_env)
    data = json.loads(strata_in(["memory", "export", "--user", "carol"], env_ok).stdout)
    assert [r["content"] for r in data["transcript"]] == ["are you up?"]


def test_unknown_user_and_bad_config_are_one_line_errors(subprocess_env: dict[str, str]) -> None:
    assert strata_in(["db", "migrate"], subprocess_env).returncode == 0  # reading makes no database
    out = strata_in(["memory", "export", "--user", "nobody"], subprocess_env)
    assert out.returncode == 2 and out.stderr.strip().startswith("error: no person")
    bad = strata_in(["memory", "show", "--user", "x"], dict(subprocess_env, STRATA_EMBED_DIM="-1"))
    assert bad.returncode == 2
    assert len(bad.stderr.strip().splitlines()) == 1 and "embed.dim" in bad.stderr


def test_doctor(fake_openai: FakeOpenAI, subprocess_env: dict[str, str],
                db_target: Path | str) -> None:
    assert strata_in(["db", "migrate"], subprocess_env).returncode == 0
    out = strata_in(["doctor"], subprocess_env)
    assert out.returncode == 0, out.stdout
    assert out.stdout.count("ok ") >= 4
    [database] = [line for line in out.stdout.splitlines() if line.startswith("ok    database")]
    assert "0 transcript rows" in database
    # One message stored while the model is unreachable: "1 transcript row", not "1 … rows".
    down = dict(subprocess_env, STRATA_LLM_BASE_URL="http://127.0.0.1:9/v1")
    assert strata_in(["chat", "--user", "a"], down, "hello\n").returncode == 0
    again = strata_in(["doctor"], subprocess_env)
    [database] = [line for line in again.stdout.splitlines() if line.startswith("ok    database")]
    assert "1 transcript row," in database, database
    if isinstance(db_target, str):  # PostgreSQL: its versions, and nothing about SQLite
        assert re.search(r"PostgreSQL \d+\.\d+, pgvector \d+\.\d+\.\d+", database), database
        assert "sqlite" not in out.stdout.lower()
    else:
        assert re.search(r"SQLite 3\.\d+\.\d+, sqlite-vec v\d", database), database
        assert "sqlite-vec and FTS5 load" in out.stdout
    broken = strata_in(["doctor"], dict(subprocess_env, STRATA_LLM_BASE_URL="http://127.0.0.1:9/v1",
                                     STRATA_LLM_MODEL="nope"))
    assert broken.returncode == 1
    fail_lines = [line for line in broken.stdout.splitlines() if line.startswith("FAIL")]
    assert len(fail_lines) == 1 and "fix:" in fail_lines[0]


def test_doctor_lists_the_models_a_server_offers(fake_openai: FakeOpenAI,
                                                  subprocess_env: dict[str, str]) -> None:
    chat = strata_in(["doctor"], dict(subprocess_env, STRATA_LLM_MODEL="llama-nope"))
    assert chat.returncode == 1
    [line] = [x for x in chat.stdout.splitlines() if x.startswith("FAIL")]
    assert "'llama-nope' is not offered" in line
    assert "fake-chat" in line and "fake-embed" in line
    embed = strata_in(["doctor"], dict(subprocess_env, STRATA_EMBED_MODEL="embed-nope"))
    assert embed.returncode == 1
    [line] = [x for x in embed.stdout.splitlines() if x.startswith("FAIL")]
    assert "'embed-nope' is not offered" in line and "fake-embed" in line


def test_db_migrate(subprocess_env: dict[str, str], db_target: Path | str) -> None:
    out = strata_in(["db", "migrate"], subprocess_env)
    assert out.returncode == 0 and "migrations applied" in out.stdout, out.stderr
    assert isinstance(db_target, str) or db_target.exists()  # a URL: the server has it


def test_default_database_is_in_the_data_folder_and_a_local_one_is_kept(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    env = {k: v for k, v in subprocess_env.items() if k != "STRATA_DB"}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    work = tmp_path / "work"
    work.mkdir()

    def run(args: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "strata.app.cli", *args], input=stdin, env=env,
                              capture_output=True, text=True, timeout=60, cwd=work)

    chat = run(["chat", "--user", "alice"], "hello\n")
    assert chat.returncode == 0, chat.stderr
    assert (tmp_path / "data" / "strata" / "strata.db").is_file()
    assert not (work / "strata.db").exists() and "note:" not in chat.stderr
    # From another folder the same memory is found.
    elsewhere = subprocess.run([sys.executable, "-m", "strata.app.cli", "memory", "show", "--user",
                                "alice"], env=env, capture_output=True, text=True, timeout=60,
                               cwd=tmp_path)
    assert elsewhere.returncode == 0 and "transcript rows: 2" in elsewhere.stdout
    # A ./strata.db made before the default moved is used, with a one-line notice.
    local = run(["chat", "--user", "bob"], "hi\n")
    assert local.returncode == 0
    made = subprocess.run([sys.executable, "-m", "strata.app.cli", "db", "migrate"],
                          env=dict(env, STRATA_DB=str(work / "strata.db")), capture_output=True,
                          text=True, timeout=60, cwd=work)
    assert made.returncode == 0, made.stderr
    kept = run(["memory", "show", "--user", "bob"])
    assert kept.returncode == 2 and "no person called 'bob'" in kept.stderr
    [note] = [line for line in kept.stderr.splitlines() if line.startswith("note:")]
    # Both exist: the advice must not move one over the other (issue 21).
    assert "./strata.db" in note and "mv " not in note and "strata db move" in note


def test_closed_pipe_exits_quietly(fake_openai: FakeOpenAI,
                                   subprocess_env: dict[str, str]) -> None:
    assert strata(["chat", "--user", "alice"], subprocess_env, "hi\n").returncode == 0
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes a byte
    try:
        proc = subprocess.run([sys.executable, "-m", "strata.app.cli", "memory", "show", "--user",
                               "alice"], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              env=subprocess_env, cwd=ROOT, timeout=60)
    finally:
        os.close(write_end)
    assert proc.stderr == "" and proc.returncode == 141


def test_empty_listings_say_so(fake_openai: FakeOpenAI, subprocess_env: dict[str, str]) -> None:
    assert strata_in(["db", "migrate"], subprocess_env).returncode == 0  # reading makes no database
    status = strata_in(["jobs", "status"], subprocess_env)
    assert status.returncode == 0 and "no people yet" in status.stdout
    assert strata_in(["chat", "--user", "alice"], subprocess_env, "hi\n").returncode == 0
    facts = strata_in(["memory", "facts", "--user", "alice"], subprocess_env)
    assert facts.returncode == 0 and facts.stdout.startswith("no facts stored for alice")
    episodes = strata_in(["memory", "episodes", "--user", "alice"], subprocess_env)
    assert episodes.returncode == 0 and episodes.stdout.startswith("no episodes for alice yet")
    show = strata_in(["memory", "show", "--user", "alice"], subprocess_env)
    assert "facts: 0 (none stored)" in show.stdout and "reminders: none" in show.stdout


def test_sigkill_mid_chat_loses_no_shown_reply(fake_openai: FakeOpenAI,
                                              subprocess_env: dict[str, str]) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "strata.app.cli", "chat", "--user", "dave"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=subprocess_env, cwd=ROOT)
    assert proc.stdin is not None and proc.stdout is not None
    shown = []
    for i in range(3):
        proc.stdin.write(f"message {i}\n")
        proc.stdin.flush()
        shown.append(proc.stdout.readline().strip())
    fake_openai.fail_next("slow", seconds=30, path="chat")  # the 4th turn hangs at the model
    proc.stdin.write("message 3\n")
    proc.stdin.flush()
    deadline = time.monotonic() + 10
    while len(fake_openai.chat_requests()) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert shown == [f"You said: message {i}" for i in range(3)]
    data = json.loads(strata(["memory", "export", "--user", "dave"], subprocess_env).stdout)
    contents = [r["content"] for r in data["transcript"]]
    for line in shown:
        assert line in contents
    assert "message 3" in contents  # the user row was durable before the model call


def test_a_chat_killed_mid_turn_answers_that_message_when_started_again(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str]) -> None:
    """Issue 35, defect 9: `kill -9` while the model writes. The message was kept; the next
    `strata chat` of the same person and channel answers it first, once, then goes on; and
    meanwhile `jobs status` does not call the killed process a live runner."""
    proc = subprocess.Popen([sys.executable, "-m", "strata.app.cli", "chat", "--user", "dave"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=subprocess_env, cwd=ROOT)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("message 0\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "You said: message 0\n"
    fake_openai.close_gate()  # the next answer is held at the model
    try:
        proc.stdin.write("message 1\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while "message 1" not in fake_openai.gated and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "message 1" in fake_openai.gated
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        fake_openai.open_gate()
    status = strata(["jobs", "status", "--user", "dave"], subprocess_env)
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith("runners: none alive"), status.stdout
    assert f"process {proc.pid} no longer runs" in status.stdout

    again = strata(["chat", "--user", "dave"], subprocess_env, "message 2\n")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == ["You said: message 1", "You said: message 2"]
    # Answered once: a third start has nothing left over.
    third = strata(["chat", "--user", "dave"], subprocess_env, "message 3\n")
    assert third.stdout.splitlines() == ["You said: message 3"]
    data = json.loads(strata(["memory", "export", "--user", "dave"], subprocess_env).stdout)
    replies = [r["content"] for r in data["transcript"] if r["role"] == "assistant"]
    assert replies == [f"You said: message {i}" for i in range(4)]


def test_zero_vectors_never_end_a_chat(fake_openai: FakeOpenAI,
                                       subprocess_env: dict[str, str]) -> None:
    """An embedder answering zero vectors (here: for every text) costs no turn and no later
    chat: the rows are kept without a vector and keyword recall still finds them."""
    fake_openai.vectors, fake_openai.broken_texts = "zero", "all"
    first = strata_in(["chat", "--user", "dora"], subprocess_env, "*\nПривет, как дела?\nhello\n")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        "You said: *", "You said: Привет, как дела?", "You said: hello"]
    assert "Traceback" not in first.stderr
    again = strata_in(["chat", "--user", "dora"], subprocess_env, "hello again\n")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == ["You said: hello again"]
    data = json.loads(strata_in(["memory", "export", "--user", "dora"], subprocess_env).stdout)
    assert [r["content"] for r in data["transcript"] if r["role"] == "user"] == [
        "*", "Привет, как дела?", "hello", "hello again"]
