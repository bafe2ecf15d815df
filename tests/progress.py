"""Progress lines for long test runs (`test.sh` turns them on): before a pass, how long it
should take; every `STRATA_TEST_PROGRESS` seconds, how far it is, how many failed and about how
long is left; at the end, what it took. What a pass took is kept in pytest's cache, so the next
pass on this machine is estimated from this machine. Loaded by tests/conftest.py; silent
unless `STRATA_TEST_PROGRESS` is set.
"""

from __future__ import annotations

import os
import time

import pytest

# What a pass of the whole suite took in a clean clone on 2 cores with little else running
# (docs/operations.md, Tests): the estimate before this machine has measured one itself.
REFERENCE_MINUTES = {"sqlite": 11, "postgres": 9}
CACHE_KEY = "strata/pass/{engine}"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


class Progress:
    def __init__(self, config: pytest.Config, every: float) -> None:
        self.config = config
        self.every = every
        self.engine = os.environ.get("STRATA_TEST_ENGINE", "sqlite").strip() or "sqlite"
        self.total = self.done = self.failed = 0
        self.start = self.last = time.monotonic()

    def _say(self, text: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            # After a run of `-q` dots, on a line of its own.
            if reporter._tw.width_of_current_line:
                reporter.write("\n")
            reporter.write_line(f"progress: {text}", flush=True)

    def _cache(self) -> pytest.Cache | None:
        return getattr(self.config, "cache", None)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)
        self.start = self.last = time.monotonic()
        cache = self._cache()
        kept = cache.get(CACHE_KEY.format(engine=self.engine), None) if cache else None
        head = f"{self.engine} pass, {self.total:,} tests; "
        if kept and kept.get("tests"):
            guess = kept["seconds"] / kept["tests"] * self.total
            self._say(head + f"the last full {self.engine} pass here took "
                      f"{_minutes(kept['seconds'])} for {kept['tests']:,} tests, so this one "
                      f"should take about {_minutes(guess)}")
        else:
            ref = REFERENCE_MINUTES.get(self.engine, max(REFERENCE_MINUTES.values()))
            self._say(head + f"no full pass measured here yet: the whole suite takes about "
                      f"{ref} min per engine on 2 free cores, longer on a busy or slower "
                      "machine")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.failed += 1

    def pytest_runtest_logfinish(self) -> None:
        self.done += 1
        now = time.monotonic()
        if now - self.last < self.every or self.done >= self.total:
            return
        self.last = now
        elapsed = now - self.start
        left = elapsed / self.done * (self.total - self.done)
        self._say(f"{self.engine} {self.done:,}/{self.total:,} tests "
                  f"({100 * self.done // self.total}%), {self.failed} failed, "
                  f"{_minutes(elapsed)} elapsed, about {_minutes(left)} left")

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.total or self.done < self.total:
            return  # stopped early (-x, Ctrl-C): not a measure of a pass
        seconds = time.monotonic() - self.start
        cache = self._cache()
        if cache is not None:
            cache.set(CACHE_KEY.format(engine=self.engine),
                      {"seconds": round(seconds, 1), "tests": self.total})
        self._say(f"{self.engine} pass done: {self.total:,} tests in {_minutes(seconds)}, "
                  f"{self.failed} failed")


def pytest_configure(config: pytest.Config) -> None:
    every = os.environ.get("STRATA_TEST_PROGRESS", "").strip()
    if every:
        config.pluginmanager.register(Progress(config, float(every)), "strata-progress")
