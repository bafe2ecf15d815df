"""Decay math: retrieval weight = exp(−Δt/τ), Δt since the item was last relevant.

Pure functions, no I/O; time always comes from the caller (an injected clock). τ by episode
level: leaf 14 d, topic super-episode 90 d, era 365 d, tombstoned 7 d.

Facts decay per kind, and the decay acts (`FACT_DECAY`, one row per kind of the data graph):
a live fact whose weight has fallen below `FACT_FLOOR` is hidden from recall
(`fact_visible`), and once it has stayed below for the kind's grace period the janitor deletes
it (`fact_expired`). Δt runs from the last time the fact was relevant (created, confirmed
again, or recalled into a prompt), so a fact in use never fades. With a floor of 0.05 a fact
is hidden after τ·ln 20 ≈ 3τ days unused. Imports nothing from the project.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

DAY = 86_400.0

EPISODE_TAU_DAYS: dict[int, float] = {0: 14.0, 1: 90.0, 2: 365.0}
TOMBSTONE_TAU_DAYS = 7.0
# How long a tombstoned episode is kept for provenance before the janitor deletes it.
TOMBSTONE_KEEP_DAYS = 30.0

# A live fact weighing less than this is hidden from recall (and later deleted).
FACT_FLOOR = 0.05


@dataclass(frozen=True, slots=True)
class FactDecay:
    """How one fact kind fades: its τ, and how long a faded fact is kept (hidden) before the
    janitor deletes it. `fades=False`: never hidden or deleted by decay."""

    tau_days: float
    grace_days: float
    fades: bool = True

    @property
    def hidden_after_days(self) -> float:
        """Days unused after which the weight is below `FACT_FLOOR`."""
        return self.tau_days * math.log(1.0 / FACT_FLOOR) if self.fades else math.inf

    @property
    def deleted_after_days(self) -> float:
        return self.hidden_after_days + self.grace_days


# Per kind: τ (days), grace (days). Hidden after ≈ 3τ days unused, deleted `grace` days later.
FACT_DECAY: dict[str, FactDecay] = {
    # Who the person is (family, job, birthday): hidden after ~3 years unused, then 6 months.
    "user_specific": FactDecay(365.0, 180.0),
    # Habits change: hidden after ~9 months unused, deleted 2 months later.
    "behavioral_pattern": FactDecay(90.0, 60.0),
    # Places matter for long: hidden after ~18 months unused, deleted 3 months later.
    "place": FactDecay(180.0, 90.0),
    # Documents: hidden after ~6 months unused, deleted a month later.
    "document": FactDecay(60.0, 30.0),
    # Research findings are news: out of recall after 15 days, gone a week later.
    "discovery": FactDecay(5.0, 7.0),
    # The person asked for it to be remembered: it ranks lower with age but never fades out.
    "note": FactDecay(365.0, 0.0, fades=False),
    # The bot's own reflective findings: hidden after ~3 months unused, deleted 2 weeks later.
    "reflection": FactDecay(30.0, 14.0),
}
# A kind missing from the table (none today; a test keeps the table complete) decays so.
DEFAULT_FACT_DECAY = FactDecay(90.0, 30.0)
FACT_TAU_DAYS: dict[str, float] = {k: d.tau_days for k, d in FACT_DECAY.items()}
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


def fact_decay(kind: str) -> FactDecay:
    return FACT_DECAY.get(kind, DEFAULT_FACT_DECAY)


def fact_tau(kind: str, live: bool = True) -> float:
    if not live:
        return SUPERSEDED_TAU_DAYS
    return fact_decay(kind).tau_days


def fact_weight(kind: str, last_relevant: datetime, now: datetime, live: bool = True) -> float:
    return weight(last_relevant, now, fact_tau(kind, live))


def fact_visible(kind: str, last_relevant: datetime, now: datetime) -> bool:
    """Whether a live fact may still be recalled: its weight is at or above `FACT_FLOOR`."""
    return not fact_decay(kind).fades or fact_weight(kind, last_relevant, now) >= FACT_FLOOR


def fact_expired(kind: str, last_relevant: datetime, now: datetime) -> bool:
    """Whether the janitor deletes a live fact: hidden for longer than its kind's grace."""
    days = (now - last_relevant).total_seconds() / DAY
    return days >= fact_decay(kind).deleted_after_days
