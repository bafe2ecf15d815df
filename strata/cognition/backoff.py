"""Exponential backoff with a cap, for background work that failed (job runs, reminder
deliveries): wait `base`, then 2×, 4× … up to `cap`, like discord.py's `ext.tasks` reconnect
loop (without its jitter: one process, and an injected clock in tests). A leaf module.
"""

from __future__ import annotations

from datetime import timedelta


def retry_delay(failures: int, base_minutes: float, cap_minutes: float) -> timedelta:
    """How long to wait after the `failures`-th failure in a row: base, 2×base, 4×base … cap."""
    exponent = min(max(failures - 1, 0), 30)  # 2**30 × base is past any sensible cap
    return timedelta(minutes=min(base_minutes * 2**exponent, cap_minutes))
