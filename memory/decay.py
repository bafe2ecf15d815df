"""Decay math: retrieval weight = exp(−Δt/τ), Δt since the item was last relevant.

Pure functions, no I/O; time always comes from the caller (an injected clock). τ by episode
level: leaf 14 d, topic super-episode 90 d, era 365 d, tombstoned 7 d. Fact kinds have their
own τ (registered by the data graph in `FACT_TAU_DAYS`). Imports nothing from the project.
"""

from __future__ import annotations

import math
from datetime import datetime

DAY = 86_400.0

EPISODE_TAU_DAYS: dict[int, float] = {0: 14.0, 1: 90.0, 2: 365.0}
TOMBSTONE_TAU_DAYS = 7.0
# How long a tombstoned episode is kept for provenance before the janitor deletes it.
TOMBSTONE_KEEP_DAYS = 30.0

# Per-kind τ for facts; superseded/retracted facts use SUPERSEDED_TAU_DAYS.
FACT_TAU_DAYS: dict[str, float] = {
    "user_specific": 365.0,
    "behavioral_pattern": 90.0,
    "place": 180.0,
    "document": 60.0,
    "discovery": 14.0,
    "note": 365.0,  # the person asked for it to be remembered
    "reflection": 30.0,  # the bot's own reflective findings
}
SUPERSEDED_TAU_DAYS = 2.0


def weight(last_relevant: datetime, now: datetime, tau_days: float) -> float:
    """exp(−Δt/τ) with Δt in days; an item from the future (clock skew) weighs 1."""
    if tau_days <= 0:
        raise ValueError("tau must be positive")
    dt_days = (now - last_relevant).total_seconds() / DAY
    return math.exp(-max(dt_days, 0.0) / tau_days)


def episode_tau(level: int, tombstoned: bool = False) -> float:
    if tombstoned:
        return TOMBSTONE_TAU_DAYS
    try:
        return EPISODE_TAU_DAYS[level]
    except KeyError:
        raise ValueError(f"no episode level {level}") from None


def episode_weight(level: int, last_relevant: datetime, now: datetime,
                   tombstoned: bool = False) -> float:
    return weight(last_relevant, now, episode_tau(level, tombstoned))


def fact_tau(kind: str, live: bool = True) -> float:
    if not live:
        return SUPERSEDED_TAU_DAYS
    return FACT_TAU_DAYS.get(kind, 90.0)


def fact_weight(kind: str, last_relevant: datetime, now: datetime, live: bool = True) -> float:
    return weight(last_relevant, now, fact_tau(kind, live))
