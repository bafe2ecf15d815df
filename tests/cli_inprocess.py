"""`strata ARGS` run inside the test process: `main(argv)` with the given environment, stdin,
stdout and stderr, giving what `subprocess.run` would (args, returncode, stdout, stderr).

A subprocess pays the interpreter's start and Strata's imports again, 2-5 s on a busy 2-core
machine, which is most of a short command's time. A test whose point is the command's output
and effect uses this; one whose point is a real process (a signal, a crash, a second process
on the database, the terminal, the exit of a process) keeps `subprocess`. Only from a plain
(not async) test: `main` runs its own event loop.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
from collections.abc import Iterator

from strata.app.cli import main


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _stream(data: bytes = b"") -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace",
                            newline="" if data else None, write_through=True)


def strata_in(args: list[str], env: dict[str, str],
              stdin: str = "") -> subprocess.CompletedProcess[str]:
    stdin_s, out, err = _stream(stdin.encode("utf-8", "surrogateescape")), _stream(), _stream()
    streams, argv = (sys.stdin, sys.stdout, sys.stderr), sys.argv
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    sys.stdin, sys.stdout, sys.stderr = stdin_s, out, err
    sys.argv = ["strata", *args]  # what a report records as its command
    try:
        with _environment(env):
            try:
                code = main(args)
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        (sys.stdin, sys.stdout, sys.stderr), sys.argv = streams, argv
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)

    def text(stream: io.TextIOWrapper) -> str:
        stream.flush()
        raw = stream.buffer.getvalue()  # type: ignore[attr-defined]
        return raw.decode("utf-8", "replace").replace("\r\n", "\n")

    return subprocess.CompletedProcess(["strata", *args], code, text(out), text(err))
