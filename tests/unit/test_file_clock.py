"""The shared simulated clock (`bot.clock_file`): every process reading one file sees the
time a test writes there; a bad file is a clear configuration error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from strata.app.model_wiring import default_clock
from strata.core.clock import FileClock, SystemClock
from strata.core.config import Settings
from strata.core.errors import ConfigError

T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


def test_two_readers_follow_the_file(tmp_path: Path) -> None:
    path = tmp_path / "clock"
    FileClock.write(path, T0)
    a, b = FileClock(path), FileClock(path)
    assert a.now() == b.now() == T0
    FileClock.write(path, T0 + timedelta(hours=7))
    assert a.now() == b.now() == T0 + timedelta(hours=7)
    path.write_text("")  # caught half-written: the last time read stands
    assert a.now() == T0 + timedelta(hours=7)
    path.unlink()
    assert b.now() == T0 + timedelta(hours=7)


def test_the_system_clock_unless_a_clock_file_is_configured(tmp_path: Path) -> None:
    assert isinstance(default_clock(Settings()), SystemClock)
    path = tmp_path / "clock"
    FileClock.write(path, T0)
    bot = Settings().bot.model_copy(update={"clock_file": str(path)})
    clock = default_clock(Settings().model_copy(update={"bot": bot}))
    assert clock.now() == T0
    path.write_text("not a time")
    with pytest.raises(ConfigError, match=r"bot\.clock_file"):
        default_clock(Settings().model_copy(update={"bot": bot}))
