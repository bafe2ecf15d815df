"""`strata run` and `strata jobs` as a user runs them: real subprocesses, the real clock for
`run` (a short tick), the fake model server over HTTP."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAI, Reply

ROOT = Path(__file__).parents[2]


def read_line(proc: subprocess.Popen[str], timeout: float = 15) -> str:
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    if not sel.select(timeout):
        raise AssertionError(f"no output within {timeout} s")
    return proc.stdout.readline().rstrip("\n")


def start_run(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "strata.app.cli", "run", *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, bufsize=1)


def remind_and_wait(proc: subprocess.Popen[str], fake_openai: FakeOpenAI) -> None:
    """Ask a running `strata run --console` for a reminder two seconds out (the fake model
    sets it) and read the answer, then the reminder itself."""
    assert proc.stdin is not None
    fake_openai.reply(Reply(tool_calls=[("set_reminder", {"text": "stretch",
                                                          "in_minutes": 0.03})]), "Will do.")
    proc.stdin.write("remind me in two seconds to stretch\n")
    proc.stdin.flush()
    assert read_line(proc) == "Will do."
    assert read_line(proc) == "⏰ Reminder: stretch"  # within read_line's hang detector


def test_run_chats_delivers_a_reminder_and_stops_cleanly_on_sigterm(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str]) -> None:
    env = dict(subprocess_env, STRATA_COGNITION_TICK_SECONDS="0.2")
    proc = start_run(env, "--console", "--user", "alice")
    try:
        remind_and_wait(proc, fake_openai)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert "strata: running console and the cognition runner" in err
        assert "strata: stopped" in err and "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def test_run_stops_on_sigint_with_no_adapters_and_at_end_of_console_input(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str]) -> None:
    proc = start_run(subprocess_env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "no chat adapters" in line
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    piped = subprocess.run([sys.executable, "-m", "strata.app.cli", "run", "--console", "--user",
                            "bo"],
                           input="hello\n", env=subprocess_env, cwd=ROOT, capture_output=True,
                           text=True, timeout=60)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.splitlines() == ["You said: hello"]


def test_jobs_run_and_status(fake_openai: FakeOpenAI, subprocess_env: dict[str, str]) -> None:
    def strata(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "strata.app.cli", *args], env=subprocess_env,
                              cwd=ROOT, capture_output=True, text=True, timeout=60)

    chat = subprocess.run([sys.executable, "-m", "strata.app.cli", "chat", "--user", "alice"],
                          input="hi\n", env=subprocess_env, cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert chat.returncode == 0, chat.stderr
    # One JSON answer that fits every job's schema (each finds nothing).
    fake_openai.responder = lambda body: json.dumps(
        {"facts": [], "patterns": [], "places": [], "queries": [], "findings": []})
    # Just spoke: the idle gate holds every job back.
    held = strata("jobs", "run", "--job", "all", "--user", "alice")
    assert held.returncode == 0, held.stderr
    assert held.stdout.count("person active 0 min ago") == 9
    # As if two hours later: decay runs; jobs with nothing to work on say so.
    later = strata("jobs", "run", "--job", "all", "--user", "alice", "--now", "2099-01-01T10:00Z",
                   "--json")
    assert later.returncode == 0, later.stderr
    reports = {r["job"]: r for r in json.loads(later.stdout)}
    assert reports["decay"]["status"] == "ok" and "weights updated" in reports["decay"]["detail"]
    assert "fact weights updated" in reports["decay"]["detail"]
    assert reports["extract"]["status"] == "ok" and "1 episodes cut" in reports["extract"]["detail"]
    assert reports["patterns"]["detail"] == "read 1 messages; 0 new patterns"
    assert reports["research"]["detail"] == "nothing to work on"  # no search provider
    forced = strata("jobs", "run", "--job", "decay", "--user", "alice", "--force")
    assert forced.returncode == 0 and "decay" in forced.stdout
    status = strata("jobs", "status", "--user", "alice", "--json")
    rows = {r["job"]: r for r in json.loads(status.stdout)}
    assert rows["decay"]["runs"] >= 1 and rows["decay"]["last_status"] == "ok"
    assert rows["research"]["runs"] == 0 and rows["research"]["last_check"] == (
        "nothing to work on")
    # Naming one job asks for it now: the idle gate does not hold it back.
    asked = strata("jobs", "run", "--job", "consolidate", "--user", "alice")
    assert asked.returncode == 0, asked.stderr
    assert "waits" not in asked.stdout and "consolidate" in asked.stdout
    # A --now before alice's last message: the age is said as a time, never negative.
    past = strata("jobs", "run", "--job", "all", "--user", "alice", "--now", "2020-03-01T12:00Z")
    assert past.returncode == 0, past.stderr
    assert "min ago" not in past.stdout
    assert past.stdout.count("after this run's time 2020-03-01 12:00") == 9
    bad = strata("jobs", "run", "--job", "dmn", "--user", "nobody")
    assert bad.returncode == 2 and bad.stderr.startswith("error: no person called 'nobody'")


def test_run_exits_non_zero_when_its_only_adapter_fails(subprocess_env: dict[str, str]) -> None:
    """A Telegram endpoint that refuses connections: the adapter fails, `strata run` says so
    in one line and exits 1 (a service manager then sees the failure)."""
    env = dict(subprocess_env, STRATA_TELEGRAM_TOKEN="123:abc",
               STRATA_TELEGRAM_BASE_URL="http://127.0.0.1:9/bot",
               STRATA_COGNITION_ENABLED="false")
    out = subprocess.run([sys.executable, "-m", "strata.app.cli", "run"], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    assert "adapter failed: telegram" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_job_failing_on_a_bad_answer_backs_off_and_then_succeeds(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str]) -> None:
    def strata(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "strata.app.cli", *args], env=subprocess_env,
                              cwd=ROOT, capture_output=True, text=True, timeout=60)

    chat = subprocess.run([sys.executable, "-m", "strata.app.cli", "chat", "--user", "alice"],
                          input="I moved to Lisbon last year\n", env=subprocess_env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert chat.returncode == 0, chat.stderr
    fake_openai.responder = lambda body: "this is not JSON at all"
    bad = strata("jobs", "run", "--job", "patterns", "--user", "alice",
                 "--now", "2099-01-01T10:00Z", "--json")
    assert bad.returncode == 1, bad.stderr
    (report,) = json.loads(bad.stdout)
    assert report["status"] == "error"
    status = {r["job"]: r for r in json.loads(
        strata("jobs", "status", "--user", "alice", "--json").stdout)}
    assert status["patterns"]["failures"] == 1
    assert status["patterns"]["next_retry"] == "2099-01-01T10:05:00+00:00"
    table = strata("jobs", "status", "--user", "alice").stdout
    assert "next retry" in table and "2099-01-01 10:05" in table
    # Within the backoff nothing runs, and no model call is made.
    calls = len(fake_openai.chat_requests())
    waiting = json.loads(strata("jobs", "run", "--job", "patterns", "--user", "alice",
                                "--now", "2099-01-01T10:04Z", "--json").stdout)
    assert waiting[0]["status"] == "skipped" and "next retry" in waiting[0]["detail"]
    assert len(fake_openai.chat_requests()) == calls
    # After it, the retry asks the model again (the bad answer is not replayed) and succeeds.
    fake_openai.responder = lambda body: json.dumps({"patterns": []})
    good = strata("jobs", "run", "--job", "patterns", "--user", "alice",
                  "--now", "2099-01-01T10:06Z", "--json")
    assert good.returncode == 0, good.stdout + good.stderr
    assert json.loads(good.stdout)[0]["status"] == "ok"
    status = {r["job"]: r for r in json.loads(
        strata("jobs", "status", "--user", "alice", "--json").stdout)}
    assert status["patterns"]["failures"] == 0 and status["patterns"]["next_retry"] is None


def test_run_console_survives_zero_vectors(fake_openai: FakeOpenAI,
                                           subprocess_env: dict[str, str]) -> None:
    """`strata run --console` against an embedder answering zero vectors: every line is
    answered and the process ends normally at end of input (it used to exit 1)."""
    fake_openai.vectors, fake_openai.broken_texts = "nan", "all"
    piped = subprocess.run([sys.executable, "-m", "strata.app.cli", "run", "--console", "--user",
                            "zed"],
                           input="*\nПривет, как дела?\nhello\n", env=subprocess_env, cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.splitlines() == [
        "You said: *", "You said: Привет, как дела?", "You said: hello"]
    assert "Traceback" not in piped.stderr


@pytest.mark.parametrize("options", [[], ["--no-jobs"]])
def test_chat_delivers_a_reminder_in_the_same_session_on_the_injected_clock(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path,
        options: list[str]) -> None:
    """`strata chat` runs the same runner as `strata run`: a reminder set in the chat arrives
    in that chat (with `--no-jobs` too, which only leaves the idle jobs out). Time is a
    clock file the test moves (`bot.clock_file`), not a sleep."""
    from datetime import UTC, datetime, timedelta

    from strata.core.clock import FileClock

    clock_file = tmp_path / "clock"
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    FileClock.write(clock_file, start)
    env = dict(subprocess_env, STRATA_BOT_CLOCK_FILE=str(clock_file),
               STRATA_COGNITION_TICK_SECONDS="0.2")
    proc = subprocess.Popen([sys.executable, "-m", "strata.app.cli", "chat", "--user", "alice",
                             *options],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, bufsize=1)
    try:
        assert proc.stdin is not None
        fake_openai.reply(Reply(tool_calls=[("set_reminder", {"text": "stretch",
                                                              "in_minutes": 30})]), "Will do.")
        proc.stdin.write("remind me in half an hour to stretch\n")
        proc.stdin.flush()
        assert read_line(proc) == "Will do."
        FileClock.write(clock_file, start + timedelta(minutes=31))
        assert read_line(proc) == "⏰ Reminder: stretch"
        proc.stdin.close()  # the end of input ends the chat, and its runner with it
        assert proc.wait(20) == 0
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)

