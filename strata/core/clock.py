"""Clocks: the one source of "now" for the whole project. A leaf module.

All time is aware UTC. Production uses `SystemClock`; tests and `--now` use `ManualClock`,
which only moves when told to; `FileClock` shares one simulated time between processes (a
simulation and testing aid, `bot.clock_file`).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path


def utcnow() -> datetime:
    """The wall clock in aware UTC."""
    return datetime.now(UTC)


def ensure_utc(ts: datetime) -> datetime:
    """Return `ts` as aware UTC; a naive datetime is taken to be UTC already."""
    if ts.tzinfo is None:
        return ts.replace(tzinfo=UTC)
    return ts.astimezone(UTC)


def to_iso(ts: datetime) -> str:
    """Fixed-width ISO-8601 UTC text that sorts in time order (how timestamps are stored)."""
    return ensure_utc(ts).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_iso(text: str) -> datetime:
    """Parse stored or user-given ISO-8601 text into aware UTC."""
    return ensure_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return utcnow()


class ManualClock:
    """A clock that stands still until advanced: for tests and for `--now` operator runs."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = ensure_utc(start) if start is not None else utcnow()

    def now(self) -> datetime:
        return self._now

    def set(self, ts: datetime) -> None:
        self._now = ensure_utc(ts)

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        self._now += delta if delta is not None else timedelta(**kwargs)
        return self._now


class FileClock:
    """Simulated time shared by several processes: "now" is the ISO-8601 time stamp in a file,
    which a test (or a simulation) rewrites to move time. Re-read when the file changes; a
    file caught half-written keeps the last time read. Never for production: the bot's time
    then stands still until someone writes the file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._seen: tuple[int, int] | None = None
        self._now = self._read()
        if self._now is None:
            raise ValueError(f"the clock file {self.path} holds no ISO-8601 time stamp")

    def _read(self) -> datetime | None:
        try:
            text = self.path.read_text().strip()
            return from_iso(text) if text else None
        except (OSError, ValueError):
            return None

    def now(self) -> datetime:
        try:
            st = os.stat(self.path)
            seen = (st.st_mtime_ns, st.st_size)
        except OSError:
            return self._now  # type: ignore[return-value]
        if seen != self._seen:
            read = self._read()
            if read is not None:
                self._now, self._seen = read, seen
        return self._now  # type: ignore[return-value]

    @staticmethod
    def write(path: str | Path, ts: datetime) -> None:
        """Move the simulated time to `ts` (written aside and renamed: no reader sees half)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(to_iso(ts))
        os.replace(tmp, path)
