"""Whether a search injects anything at all: the abstention gate's inputs gathered from one
search (how far the best window stands out, how much of the query one passage holds, the names
the query mentions, what this memory ties to them), and the gate's verdict
(`strata.memory.recall.gate`). Split from `strata.memory.recall.search`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from strata.memory.recall.bridge import whose
from strata.memory.recall.gate import gate_features, gate_idf, gate_logit
from strata.memory.recall.hint import GateWords, own_coverage
from strata.memory.recall.index import OwnerRows
from strata.memory.recall.profiles import ProfileCache
from strata.memory.recall.rank import WindowScores
from strata.memory.recall.types import Candidate, RecallQuery, RecallTuning
from strata.memory.rules.names import name_check
from strata.memory.rules.row_table import RowTable, surface_words
from strata.memory.rules.text import text_coverage


@dataclass(frozen=True, slots=True)
class GateScope:
    """What the gate needs when a hint or a bridge widened the ranking: the question's own
    words (`gate`, None when nothing widened it), and the rows and recency it ranked over."""

    gate: GateWords | None
    mask: npt.NDArray[np.bool_]
    recency: npt.NDArray[np.float64]


def gate_opens(q: RecallQuery, stems: list[str], rows: OwnerRows, table: RowTable,
               ws: WindowScores, extras: list[Candidate], scope: GateScope,
               tuning: RecallTuning, profiles: ProfileCache) -> bool:
    """The gate: how far the best window stands out, and how much of the query one passage
    of memory holds (a note counts as such a passage)."""
    z, cover = gate_features(table, ws, q.text, stems)
    gate = scope.gate
    if gate is not None:  # a hint or a bridge widened the ranking: the question's words
        owner = whose(q.text, *profiles.speakers(q.owner_id, table, rows.texts)
                      ) if gate.bridges and tuning.bridge_whose else None
        cover = own_coverage(table, gate, q.text, scope.mask, scope.recency,
                             tuning.rank, ws.counted, owner)
    if extras:
        weights = gate_idf(table, stems if gate is None else gate.stems)
        cover = max(cover, *(text_coverage(c.text, weights) for c in extras))
    # A name said only in rows since pruned lives on in the notes: not a stranger.
    noted = {w for c in extras for w in surface_words(c.text)}
    names = name_check(q.text, table, noted)
    unowned = profiles.penalty(q.owner_id, table, rows.texts, q.text,
                               [c.text for c in extras], tuning.gate_unowned
                               ) if names.familiar else 0.0
    return gate_logit(z, cover, names, tuning.rank, unowned) >= 0
