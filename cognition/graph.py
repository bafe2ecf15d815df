"""The data graph as the background jobs see it: add a typed fact with provenance, list live
facts. One small seam so the jobs do not depend on the fact store's internals.

`fact_graph(services)` adapts the data-graph store (`memory.facts`) when it is installed.
May import `bot` and `memory`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bot.errors import StrataError


class DependencyMissingError(StrataError):
    """A job needs a part of the memory layer that this build does not have."""


@dataclass(frozen=True, slots=True)
class FactView:
    id: int
    kind: str
    text: str
    created_at: datetime
    url: str | None = None


class FactGraph(Protocol):
    async def add(
        self,
        *,
        owner_id: int,
        kind: str,
        text: str,
        source: str,
        now: datetime,
        row_ids: Sequence[int] = (),
        url: str | None = None,
    ) -> bool:
        """Store a fact; False (and nothing stored) when the same live fact already exists."""
        ...

    async def live(self, owner_id: int, kinds: Sequence[str]) -> list[FactView]: ...
