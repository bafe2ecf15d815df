"""The grounding rule's refusals, counted per person, layer and reason
(`strata.memory.checks.grounding`; shown by `strata jobs status`). Each refusal is logged at
DEBUG with its text; only the counts are stored."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from strata.core.clock import from_iso, to_iso
from strata.memory.checks.grounding import Refusal, log_refusal
from strata.memory.engines.db import Database


@dataclass(frozen=True, slots=True)
class RefusalCount:
    layer: str
    reason: str
    count: int
    last_at: datetime


class RefusalRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, owner_id: int, refusals: Sequence[Refusal], now: datetime) -> None:
        """Log each refusal and add it to the person's counts (one write for all)."""
        if not refusals:
            return
        for refusal in refusals:
            log_refusal(refusal, owner_id)
        counts = Counter((r.layer, r.reason) for r in refusals)
        async with self.db.write() as conn:
            for (layer, reason), n in sorted(counts.items()):
                await conn.execute(
                    "INSERT INTO grounding_refusals (owner_id, layer, reason, count, last_at)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner_id, layer, reason) DO UPDATE"
                    " SET count = grounding_refusals.count + excluded.count,"
                    " last_at = excluded.last_at",
                    (owner_id, layer, reason, n, to_iso(now)),
                )

    async def for_owner(self, owner_id: int) -> list[RefusalCount]:
        rows = await self.db.fetchall(
            "SELECT layer, reason, count, last_at FROM grounding_refusals WHERE owner_id = ?"
            " ORDER BY layer, reason", (owner_id,))
        return [RefusalCount(r[0], r[1], int(r[2]), from_iso(r[3])) for r in rows]
