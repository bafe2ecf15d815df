"""A run that leaves a non-daemon thread alive fails, names the test that left it, and exits.

Python waits for every non-daemon thread before it exits, so one left by a test (an aiosqlite
connection never closed keeps its worker thread) made green runs hang at exit with nothing
said, and CI timed out. Here each new non-daemon thread is traced to the test during which it
appeared; at the end of the run any still alive fail the run with those tests named, and the
process then exits instead of waiting forever for threads nobody will stop.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator

import pytest

_first_seen: dict[threading.Thread, str] = {}
_leftover: list[threading.Thread] = []


def _alive() -> set[threading.Thread]:
    return {
        t for t in threading.enumerate()
        if t is not threading.main_thread() and not t.daemon and t.is_alive()
    }


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    yield
    for thread in _alive():
        _first_seen.setdefault(thread, item.nodeid)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    _leftover.extend(_alive())
    if not _leftover:
        return
    for thread in _leftover:
        seen = _first_seen.get(thread, "outside any test")
        sys.stderr.write(f"non-daemon thread {thread.name!r} still alive, left by {seen}\n")
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if _leftover:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(pytest.ExitCode.TESTS_FAILED))
