"""What the live leaf episodes say about the rows they cite: how faded (decay weight) and how
salient each row is, for recall's ranking and its `decay_floor` (docs/lifecycle.md §3)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from strata.core.clock import from_iso
from strata.memory.recall.select import Unit
from strata.memory.rules.decay import episode_weight
from strata.memory.store.episodes import LEAF
from strata.memory.store.recall_reads import RecallReads

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class LeafCitations:
    """The owner's live leaves (last relevant time as stored, salience) and the rows each
    cites."""

    last_relevant: list[str] = field(default_factory=list)
    salience: list[float] = field(default_factory=list)
    cited: list[I64] = field(default_factory=list)


class LeafIndex:
    """The rows each live leaf of an owner cites, kept for the `OWNERS_KEPT` most recently
    searched owners: a leaf's citations are written with it and never change (a cited row
    that is deleted is gone from the row table too, and ids are never reused), so a search
    reads only the leaves themselves — one short row each — not their 20-odd citations."""

    def __init__(self, reads: RecallReads, owners_kept: int) -> None:
        self.reads = reads
        self.owners_kept = owners_kept
        self._cited: OrderedDict[int, dict[int, I64]] = OrderedDict()

    async def citations(self, owner_id: int) -> LeafCitations:
        leaves = await self.reads.live_leaves(owner_id)
        known = self._cited.pop(owner_id, {})
        ids = [int(r[0]) for r in leaves]
        cited = {i: known[i] for i in ids if i in known}  # tombstoned leaves drop out
        missing = [i for i in ids if i not in cited]
        found = await self.reads.leaf_rows(missing)
        cited.update((i, np.asarray(v, dtype=np.int64)) for i, v in found.items())
        self._cited[owner_id] = cited
        while len(self._cited) > self.owners_kept:
            self._cited.popitem(last=False)
        return LeafCitations([str(r[1]) for r in leaves], [float(r[2]) for r in leaves],
                             [cited[i] for i in ids])


    def known(self, owner_id: int) -> dict[int, I64]:
        """The citations of the owner's live leaves as of their last `citations` (a leaf
        tombstoned since may still be there; nothing that is not a leaf ever is)."""
        return self._cited.get(owner_id, {})


async def no_leaves() -> LeafCitations:
    return LeafCitations()


def leaf_signals(leaves: LeafCitations, ids: I64,
                 now: datetime) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per row of the table (`ids`: its row ids, ascending): the highest decay weight and
    salience among the live leaves citing it; nan for a row no live leaf cites. Each distinct
    time is parsed once (leaves rolled up together share it)."""
    n = ids.shape[0]
    weight = np.full(n, np.nan)
    salience = np.full(n, np.nan)
    if not leaves.cited or not n:
        return weight, salience
    rows = np.concatenate(leaves.cited)
    leaf = np.repeat(np.arange(len(leaves.cited)), [c.shape[0] for c in leaves.cited])
    at = np.minimum(np.searchsorted(ids, rows), n - 1)
    keep = ids[at] == rows  # cited rows no longer in the table (pruned) are left out
    if not keep.any():
        return weight, salience
    seen: dict[str, float] = {}
    w = np.fromiter((seen[t] if t in seen else seen.setdefault(
        t, episode_weight(LEAF, from_iso(t), now)) for t in leaves.last_relevant), np.float64,
        len(leaves.last_relevant))
    sal = np.asarray(leaves.salience, dtype=np.float64)
    # fmax ignores the nan a row starts with.
    np.fmax.at(weight, at[keep], w[leaf[keep]])
    np.fmax.at(salience, at[keep], sal[leaf[keep]])
    return weight, salience


def mark_faded(units: Sequence[Unit], faded: npt.NDArray[np.bool_]) -> list[Unit]:
    """Windows whose centre row has faded (`faded`, per table row) marked as such."""
    return [replace(u, faded=True) if u.key >= 0 and faded[u.key] else u for u in units]
