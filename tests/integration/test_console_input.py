"""`strata chat` with odd input, and what Strata prints of stored text: the command line run in
this process (`tests.cli_inprocess`), the fake model over HTTP and a real database (issue 21,
defects 5 and 8)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from tests.cli_inprocess import strata_in as strata
from tests.fakes.openai_server import FakeOpenAI

RED, TITLE = "\x1b[31m", "\x1b]0;pwned\x07"


def test_blank_lines_and_unknown_commands_are_not_turns(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str]) -> None:
    out = strata(["chat", "--user", "alice"], subprocess_env,
                 "hi\n\n   \n\t\n/bogus\n/usr/bin is a folder\n")
    assert out.returncode == 0, out.stderr
    # Blank lines: no reply, no model call, nothing stored. `/bogus`: named, not sent.
    assert out.stdout.splitlines() == [
        "You said: hi", "unknown command /bogus, /help lists them",
        "You said: /usr/bin is a folder"]
    assert len(fake_openai.chat_requests()) == 2
    data = json.loads(strata(["memory", "export", "--user", "alice"], subprocess_env).stdout)
    assert [r["content"] for r in data["transcript"] if r["role"] == "user"] == [
        "hi", "/usr/bin is a folder"]


def test_a_user_name_that_cannot_be_a_person_is_refused(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str]) -> None:
    for bad in ("", "  ", "a/b", "bob\x1b[2J"):
        out = strata(["chat", "--user", bad], subprocess_env, "hello\n")
        assert out.returncode == 2, (bad, out.stdout, out.stderr)
        assert "--user" in out.stderr and "Traceback" not in out.stderr
        assert out.stdout == ""
    bad_channel = strata(["chat", "--user", "ann", "--channel", ""], subprocess_env, "x\n")
    assert bad_channel.returncode == 2 and "--channel" in bad_channel.stderr
    assert fake_openai.chat_requests() == []
    status = strata(["jobs", "status"], subprocess_env)
    # A SQLite file is not even made (reading commands create nothing); a server has no people.
    assert ("no people yet" in status.stdout
            or "nothing is stored yet" in status.stderr), status.stdout + status.stderr


def test_terminal_control_is_dropped_on_the_way_in(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str]) -> None:
    """Issue 35, defect 7: what someone types cannot clear or retitle the operator's terminal,
    and NUL and BEL are not stored; words, newlines, tabs and emoji are."""
    env = {**subprocess_env, "STRATA_EPISODES_USE_MODEL": "false"}
    chat = strata(["chat", "--user", "eve"], env, "hello\x1b[2J\x1b]0;pwned\x07\n"
                  "nul\x00 and bel\x07 in\tmy cat 😀 Miso\n")
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout == "You said: hello\nYou said: nul and bel in\tmy cat 😀 Miso\n"
    data = json.loads(strata(["memory", "export", "--user", "eve"], env).stdout)
    assert [r["content"] for r in data["transcript"] if r["role"] == "user"] == [
        "hello", "nul and bel in\tmy cat 😀 Miso"]
    recall = strata(["memory", "recall", "--user", "eve", "hello"], env)
    assert recall.returncode == 0, recall.stderr
    assert "hello" in recall.stdout
    for out in (chat.stdout, chat.stderr, recall.stdout, recall.stderr):
        assert not any(c in out for c in "\x1b\x07\x00\x9b"), out


def test_stored_control_characters_are_printed_visibly(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str]) -> None:
    """A model's reply is stored as it came (and an old database may hold anything): every
    listing shows its control characters as text, never obeys them."""
    env = {**subprocess_env, "STRATA_EPISODES_USE_MODEL": "false"}
    fake_openai.reply(f"my cat is {RED}Miso{TITLE}\tand\x08 naps")
    chat = strata(["chat", "--user", "eve"], env, "tell me about my cat\n")
    assert strata(["chat", "--user", "eve"], env, "the weather is grey\n").returncode == 0
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout == "my cat is ^[[31mMiso^[]0;pwned^G\tand^H naps\n"
    assert strata(["memory", "cut", "--flush"], env).returncode == 0
    # Recall is not listed: it never shows the bot's replies as memory (docs/recall.md).
    for args in (["memory", "episodes", "--user", "eve"],
                 ["memory", "export", "--user", "eve"]):
        out = strata(args, env)
        assert out.returncode == 0, out.stderr
        assert "\x1b" not in out.stdout and "\x07" not in out.stdout, args
        assert "[31mMiso" in out.stdout, (args, out.stdout)


def test_a_problem_is_one_friendly_line_and_logs_go_where_asked(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    env = {**subprocess_env, "STRATA_EMBED_BASE_URL": "http://127.0.0.1:9/v1"}
    said = "hi\nI moved to Lyon\nand I like it\n"
    replies = ["You said: hi", "You said: I moved to Lyon", "You said: and I like it"]
    out = strata(["chat", "--user", "alice"], env, said)
    assert out.returncode == 0 and out.stdout.splitlines() == replies
    # Once for the whole chat, not per message, with the fix; no timestamped log lines.
    assert out.stderr.splitlines() == [
        "embeddings unavailable (embedding model: cannot connect): recall uses keywords only "
        "until they are back; run `strata doctor`"]

    log = tmp_path / "logs" / "strata.log"
    log.parent.mkdir()
    to_file = strata(["--log-file", str(log), "chat", "--user", "alice"], env, said)
    assert to_file.stdout.splitlines() == replies
    assert to_file.stderr.count("embeddings unavailable") == 1
    assert "WARNING" not in to_file.stderr
    written = log.read_text(encoding="utf-8")
    assert "WARNING strata.memory.recall.search: recall: query embedding failed" in written
    assert stat.S_IMODE(log.stat().st_mode) == 0o600

    loud = strata(["--log-level", "warning", "chat", "--user", "alice"], env, said)
    assert loud.stdout.splitlines() == replies
    assert "WARNING strata.memory.recall.search" in loud.stderr
    bad = strata(["--log-level", "chatty", "chat", "--user", "alice"], env, said)
    assert bad.returncode == 2 and "--log-level" in bad.stderr
