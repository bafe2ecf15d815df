import math
from datetime import UTC, datetime, timedelta

import pytest

from strata.memory.rules.decay import (
    FACT_DECAY,
    FACT_FLOOR,
    episode_weight,
    fact_expired,
    fact_visible,
    fact_weight,
    weight,
)
from strata.memory.rules.fact_types import FACT_KINDS

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def test_weight_is_one_when_just_relevant() -> None:
    assert weight(NOW, NOW, 14) == 1.0


def test_leaf_after_tau_is_one_over_e() -> None:
    assert episode_weight(0, NOW - timedelta(days=14), NOW) == pytest.approx(math.exp(-1))


@pytest.mark.parametrize(("level", "days", "expected"), [
    (0, 7, 0.6065306597),    # exp(-7/14)
    (1, 90, 0.3678794412),   # exp(-1)
    (2, 730, 0.1353352832),  # exp(-2)
])
def test_hand_computed_values(level: int, days: int, expected: float) -> None:
    assert episode_weight(level, NOW - timedelta(days=days), NOW) == pytest.approx(expected)


def test_tombstoned_decays_with_seven_days() -> None:
    w = episode_weight(2, NOW - timedelta(days=7), NOW, tombstoned=True)
    assert w == pytest.approx(math.exp(-1))


def test_future_timestamps_do_not_exceed_one() -> None:
    assert weight(NOW + timedelta(days=3), NOW, 14) == 1.0


def test_fact_kinds_decay_at_their_own_rate() -> None:
    then = NOW - timedelta(days=14)
    assert fact_weight("discovery", then, NOW) == pytest.approx(math.exp(-14 / 5))
    assert fact_weight("user_specific", then, NOW) > 0.96
    assert fact_weight("user_specific", then, NOW, live=False) < 0.01


def test_every_kind_has_a_decay_row() -> None:
    assert set(FACT_KINDS) == set(FACT_DECAY)


@pytest.mark.parametrize(("kind", "days", "visible", "expired"), [
    ("discovery", 13, True, False),
    ("discovery", 16, False, False),  # out of recall after about two weeks …
    ("discovery", 23, False, True),  # … and deleted a week later
    ("discovery", 120, False, True),
    ("user_specific", 365, True, False),  # a year on, still recalled
    ("user_specific", 1100, False, False),
    ("user_specific", 1300, False, True),
    ("reflection", 80, True, False),
    ("reflection", 100, False, False),
    ("note", 5000, True, False),  # asked to be remembered: never fades out
])
def test_a_faded_fact_is_hidden_then_expires(kind: str, days: int, visible: bool,
                                             expired: bool) -> None:
    then = NOW - timedelta(days=days)
    assert fact_visible(kind, then, NOW) is visible
    assert fact_expired(kind, then, NOW) is expired
    # Hidden exactly when the weight is under the floor (for kinds that fade).
    if FACT_DECAY[kind].fades:
        assert visible is (fact_weight(kind, then, NOW) >= FACT_FLOOR)
