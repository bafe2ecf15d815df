"""The progress line of the long commands (`strata.app.cli.progress`), on a real terminal (a
pseudo-terminal): each step named as it starts with the count done, the elapsed time redrawn
while a step runs, the line cleared at the end; on a pipe, nothing at all."""

from __future__ import annotations

import asyncio
import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from strata.app.cli import main
from strata.app.cli.progress import progress
from tests.fakes.openai_server import FakeOpenAI

ROOT = Path(__file__).parents[2]


def read_all(fd: int) -> str:
    chunks = []
    os.set_blocking(fd, False)
    while True:
        try:
            chunk = os.read(fd, 65536)
        except (BlockingIOError, OSError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


async def test_steps_and_ticks_on_a_terminal() -> None:
    master, slave = pty.openpty()
    terminal = os.fdopen(slave, "w", buffering=1)
    try:
        async with progress("cut", 2, file=terminal, tick=0.05) as shown:
            shown.step("embedding new rows")
            await asyncio.sleep(0.2)  # a long step: the line is redrawn meanwhile
            shown.step("cutting episodes")
        terminal.flush()
        drawn = read_all(master)
    finally:
        terminal.close()
        os.close(master)
    assert "cut: embedding new rows (0/2 done)" in drawn, drawn
    assert "cut: cutting episodes (1/2 done)" in drawn, drawn
    assert drawn.count("embedding new rows") >= 3, drawn  # ticked while it ran


async def test_nothing_on_a_pipe() -> None:
    pipe = io.StringIO()
    async with progress("cut", 2, file=pipe) as shown:
        shown.step("embedding new rows")
        shown.total(3)
    assert pipe.getvalue() == ""


def on_a_terminal(env: dict[str, str], *argv: str) -> tuple[int, str, str]:
    """`strata ARGV` as a process whose stderr is a terminal: exit code, stdout, stderr."""
    master, slave = pty.openpty()
    # A terminal 100 columns wide (a new pseudo-terminal has none, where tqdm draws nothing).
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        done = subprocess.run([sys.executable, "-m", "strata.app.cli", *argv], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                              text=True, timeout=120, cwd=ROOT)
        return done.returncode, done.stdout, read_all(master)
    finally:
        os.close(slave)
        os.close(master)


def test_memory_cut_and_jobs_run_show_their_steps_on_a_terminal(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in subprocess_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"I moved to Lyon.\n")))
    assert main(["chat", "--user", "alice", "--no-jobs"]) == 0
    code, out, drawn = on_a_terminal(subprocess_env, "memory", "cut", "--flush")
    assert code == 0 and "rows embedded" in out, drawn
    assert "memory cut: embedding new rows" in drawn, drawn
    assert "memory cut: cutting episodes (the model summarises each) (1/2 done)" in drawn, drawn
    code, out, drawn = on_a_terminal(subprocess_env, "jobs", "run", "--job", "extract",
                                     "--user", "alice")
    assert "jobs run: extract for alice (0/1 done)" in drawn, drawn
    assert "extract" in out  # the result line on stdout, the progress line gone
