"""The model calls each person made lately, counted in the database: every process on it sees
the same count, so N processes hold a person to one cap, not N caps
(`strata.bot.limits.CallLimiter`). Imports `strata.core.clock` and `strata.memory.engines.db`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from strata.core.clock import from_iso, to_iso
from strata.memory.engines.db import Database


class ModelCalls:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def take(self, person_id: int, now: datetime, window: timedelta,
                   cap: int) -> float | None:
        """Count one call for the person if fewer than `cap` were made in the `window` before
        `now`: None when counted, else the seconds until the oldest of them leaves the window.
        One write transaction (the database's one writer on both engines), so two processes
        never both take the last call."""
        async with self.db.write() as conn:
            await conn.execute("DELETE FROM model_calls WHERE person_id = ? AND at <= ?",
                               (person_id, to_iso(now - window)))
            [row] = await conn.execute_fetchall(
                "SELECT count(*), min(at) FROM model_calls WHERE person_id = ?", (person_id,))
            if int(row[0]) >= cap:
                return (from_iso(row[1]) + window - now).total_seconds()
            await conn.execute("INSERT INTO model_calls (person_id, at) VALUES (?, ?)",
                               (person_id, to_iso(now)))
            return None
