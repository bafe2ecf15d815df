"""`strata chat` with bytes that are not UTF-8, on a strict ASCII stdin/stdout and under the
C locale: every line is answered, nothing hangs, nothing blames the model (issue 12, defect 6).
A real subprocess, the fake model over HTTP and a real SQLite file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
# Latin-1 "café", a lone continuation byte, a truncated 3-byte sequence, then plain text.
BAD_INPUT = b"caf\xe9\n\x80oops\n\xe2\x82\nhello\n"


def chat_bytes(env: dict[str, str], data: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "strata.app.cli", "chat", "--user", "dora"],
                          input=data, env=env, capture_output=True, timeout=30, cwd=ROOT)


@pytest.mark.parametrize("io_env", [
    {"PYTHONIOENCODING": "ascii:strict"},
    {"LC_ALL": "C", "LANG": "C"},
    {"LC_ALL": "C.UTF-8"},
], ids=["ascii-strict", "c-locale", "utf8-locale"])
def test_invalid_utf8_on_stdin_is_answered(subprocess_env: dict[str, str],
                                           io_env: dict[str, str]) -> None:
    env = {k: v for k, v in subprocess_env.items()
           if k not in ("LC_ALL", "LANG", "PYTHONIOENCODING")}
    env.update(io_env)
    out = chat_bytes(env, BAD_INPUT)
    assert out.returncode == 0, out.stderr.decode("utf-8", "replace")
    text = out.stdout.decode("utf-8", "replace")
    lines = text.splitlines()
    assert len(lines) == 4, text
    assert all(line.startswith("You said: ") for line in lines), text
    assert lines[-1] == "You said: hello"
    assert "could not use" not in text and "Sorry" not in text
    assert b"Traceback" not in out.stderr

    export = subprocess.run([sys.executable, "-m", "strata.app.cli", "memory", "export", "--user",
                             "dora"], env=subprocess_env, capture_output=True, timeout=60,
                            cwd=ROOT)
    data = json.loads(export.stdout)
    said = [r["content"] for r in data["transcript"] if r["role"] == "user"]
    # The undecodable bytes become U+FFFD; the rest of each line is kept.
    assert said == ["caf\ufffd", "\ufffdoops", "\ufffd", "hello"]


def test_non_ascii_reply_on_ascii_stdout(subprocess_env: dict[str, str]) -> None:
    """A reply the terminal cannot encode is printed with replacements, not lost."""
    env = dict(subprocess_env, PYTHONIOENCODING="ascii:strict")
    out = chat_bytes(env, "Привет\nhi\n".encode())
    assert out.returncode == 0, out.stderr.decode("utf-8", "replace")
    lines = out.stdout.decode("ascii").splitlines()
    assert lines == ["You said: ??????", "You said: hi"]
