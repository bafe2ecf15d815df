"""`strata chat` with odd input, and what Strata prints of stored text: a real subprocess, the
fake model over HTTP and a real database (issue 21, defects 5 and 8)."""

from __future__ import annotations

import json

from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_cli import strata

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
    assert "no people yet" in status.stdout, status.stdout


def test_escape_sequences_in_stored_text_are_printed_visibly(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str]) -> None:
    env = {**subprocess_env, "STRATA_EPISODES_USE_MODEL": "false"}
    said = f"my cat is {RED}Miso{TITLE}\tand\x08 naps"
    chat = strata(["chat", "--user", "eve"], env, said + "\n")
    assert strata(["chat", "--user", "eve"], env, "the weather is grey\n").returncode == 0
    assert chat.returncode == 0, chat.stderr
    visible = "my cat is ^[[31mMiso^[]0;pwned^G\tand^H naps"
    assert chat.stdout == f"You said: {visible}\n"
    # Stored as said: only the printing is visible.
    data = json.loads(strata(["memory", "export", "--user", "eve"], env).stdout)
    assert said in [r["content"] for r in data["transcript"]]
    assert strata(["memory", "cut", "--flush"], env).returncode == 0
    for args in (["memory", "episodes", "--user", "eve"],
                 ["memory", "show", "--user", "eve"],
                 ["memory", "recall", "--user", "eve", "my cat"]):
        out = strata(args, env)
        assert out.returncode == 0, out.stderr
        assert "\x1b" not in out.stdout and "\x07" not in out.stdout, args
        assert "^[[31mMiso" in out.stdout, (args, out.stdout)
