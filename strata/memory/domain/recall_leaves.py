"""What the live leaf episodes say about the rows they cite: how faded (decay weight) and how
salient each row is, for recall's ranking and its `decay_floor` (docs/lifecycle.md §3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from strata.core.clock import from_iso
from strata.memory.domain.decay import episode_weight
from strata.memory.domain.episodes import LEAF
from strata.memory.domain.recall_select import Unit
from strata.memory.engines.db import Reads


@dataclass(frozen=True, slots=True)
class LeafCitations:
    """The rows the owner's live leaves cite, each with the citing leaf's last relevant time
    (as stored) and salience; a row two leaves cite comes twice."""

    row_ids: list[int] = field(default_factory=list)
    last_relevant: list[str] = field(default_factory=list)
    salience: list[float] = field(default_factory=list)


async def leaf_citations(reads: Reads, owner_id: int) -> LeafCitations:
    found = await reads.fetchall(
        "SELECT r.row_id, e.last_relevant_at, e.salience FROM episodes e"
        " JOIN episode_rows r ON r.episode_id = e.id"
        " WHERE e.owner_id = ? AND e.level = ? AND e.tombstoned_at IS NULL",
        (owner_id, LEAF))
    return LeafCitations([int(r[0]) for r in found], [str(r[1]) for r in found],
                         [float(r[2]) for r in found])


async def no_leaves() -> LeafCitations:
    return LeafCitations()


def leaf_signals(leaves: LeafCitations, position: Mapping[int, int], n: int,
                 now: datetime) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per row of the table: the highest decay weight and salience among the live leaves
    citing it; nan for a row no live leaf cites. Each distinct time is parsed once (a leaf's
    rows share it)."""
    weight = np.full(n, np.nan)
    salience = np.full(n, np.nan)
    at = np.fromiter((position.get(r, -1) for r in leaves.row_ids), np.int64,
                     len(leaves.row_ids))
    keep = at >= 0
    if not keep.any():
        return weight, salience
    seen: dict[str, float] = {}
    w = np.fromiter((seen[t] if t in seen else seen.setdefault(
        t, episode_weight(LEAF, from_iso(t), now)) for t in leaves.last_relevant), np.float64,
        len(leaves.last_relevant))
    sal = np.asarray(leaves.salience, dtype=np.float64)
    # fmax ignores the nan a row starts with.
    np.fmax.at(weight, at[keep], w[keep])
    np.fmax.at(salience, at[keep], sal[keep])
    return weight, salience


def mark_faded(units: Sequence[Unit], faded: npt.NDArray[np.bool_]) -> list[Unit]:
    """Windows whose centre row has faded (`faded`, per table row) marked as such."""
    return [replace(u, faded=True) if u.key >= 0 and faded[u.key] else u for u in units]
