"""Clocks: the one source of "now" for the whole project. A leaf module.

All time is aware UTC. Production uses `SystemClock`; tests and `--now` use `ManualClock`,
which only moves when told to.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


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
