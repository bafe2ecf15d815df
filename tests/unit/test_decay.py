import math
from datetime import UTC, datetime, timedelta

import pytest

from memory.decay import episode_weight, fact_weight, weight

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
    assert fact_weight("discovery", then, NOW) == pytest.approx(math.exp(-1))
    assert fact_weight("user_specific", then, NOW) > 0.96
    assert fact_weight("user_specific", then, NOW, live=False) < 0.01
