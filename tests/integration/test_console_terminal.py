"""`strata chat` in a real terminal (a pty driven by pexpect): line editing with the arrow keys,
history with ↑ (across runs, in a 0600 file), and a multi-line paste sent as one message
(issue 21, defect 6). The fake model server answers "You said: …" over real HTTP."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pexpect

from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_cli import ROOT, strata

LEFT, UP = "\x1b[D", "\x1b[A"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


def spawn_chat(env: dict[str, str]) -> pexpect.spawn:
    child = pexpect.spawn(sys.executable, ["-m", "strata.app.cli", "chat", "--user", "alice"],
                          env=env, cwd=str(ROOT), encoding="utf-8", timeout=30,
                          dimensions=(24, 120))
    child.expect_exact("you>")
    return child


def send_line(child: pexpect.spawn, keys: str, reply: str) -> None:
    child.send(keys)
    child.send("\r")
    child.expect_exact(reply)
    child.expect_exact("you>")


def end(child: pexpect.spawn) -> None:
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_arrow_keys_edit_and_up_recalls_the_previous_line(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    # No cursor-position query: pexpect is a terminal that never answers one.
    env = {**subprocess_env, "XDG_DATA_HOME": str(tmp_path / "data"), "TERM": "xterm",
           "PROMPT_TOOLKIT_NO_CPR": "1"}
    child = spawn_chat(env)
    # A paste of two lines arrives whole, as one message.
    send_line(child, PASTE_START + "line one\nline two" + PASTE_END, "You said: line one")
    # "helo world", seven steps left (to just after "hel"), then the missing "l".
    send_line(child, "helo world" + LEFT * 7 + "l", "You said: hello world")
    # ↑ brings the line back for editing; the words typed after it are added at the end.
    send_line(child, UP + " again", "You said: hello world again")
    end(child)

    # History survives the run: ↑ in a new chat brings back the last line sent.
    child = spawn_chat(env)
    send_line(child, UP + "!", "You said: hello world again!")
    end(child)

    data = json.loads(strata(["memory", "export", "--user", "alice"], subprocess_env).stdout)
    said = [r["content"] for r in data["transcript"] if r["role"] == "user"]
    assert said == ["line one\nline two", "hello world", "hello world again",
                    "hello world again!"]
    assert not any("\x1b" in text for text in said)
    history = tmp_path / "data" / "strata" / "console-history" / "alice%2Fdefault"
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    assert stat.S_IMODE(history.parent.stat().st_mode) == 0o700
    assert "+hello world again!" in history.read_text(encoding="utf-8")
