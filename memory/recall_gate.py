"""Recall's abstention gate: whether the best of an owner's memory answers the query at all.

Pure (numpy, no SQL, no I/O). Two features, each relative to the owner's own memory so that
they mean the same in any memory and with any embedding model:

- `z`: how far the best window's cosine stands out of the owner's windows for this query, in
  standard deviations, less the sqrt(2 ln n) that the best of n unrelated windows reaches
  anyway (`memory.recall_rank.window_scores` computes it);
- `coverage`: the idf-weighted share of the query's words that the best window by keywords
  holds (the one passage of memory that holds most of what was asked). Names
  count like any word: a name this memory never mentions is a word it lacks, with the highest
  idf, so a question about a stranger scores low without a separate veto, and one about a
  known person asking after something never said scores low for the words it lacks.
  Months, weekdays and numbers are left out: memory keeps dates in its headers, not in what
  was said, so the "June" of "what did she do in June?" is no word the answer lacks.

Inject only when `gate_bias + gate_cosine · z + gate_keyword · coverage > 0`. The
coefficients were fitted by logistic regression leaving one tuning conversation out, the
bias set for a false-injection rate of at most 0.10 (docs/recall.md, `bench/recall_gate.py`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from memory.recall_rank import (
    CALENDAR_STEMS,
    GATE_PRIOR_DOCS,
    RankTuning,
    RowTable,
    WindowScores,
    keyword_coverage,
    without_names,
)


def gate_idf(table: RowTable, stems: Sequence[str]) -> dict[str, float]:
    """The query's stems weighted by idf over the owner's rows plus `GATE_PRIOR_DOCS` that hold
    none of them: in a memory of a handful of rows a word said twice still outweighs one never
    said. Dates and numbers left out."""
    n = table.n + GATE_PRIOR_DOCS
    out = {}
    for t in stems:
        if t in CALENDAR_STEMS or t.isdigit():
            continue
        df = len(table.postings.get(t, ()))
        out[t] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
    return out or {t: 1.0 for t in stems}


def gate_features(table: RowTable, ws: WindowScores, query: str, stems: Sequence[str], *,
                  names: bool = True) -> tuple[float, float]:
    """(z, coverage) of a query's window scores. `names=False`: the coverage of the query's
    words other than names (what the previous gate used; for comparison only)."""
    weights = gate_idf(table, stems)
    if not names:
        weights = without_names(query, weights)
    if ws.bm25_best <= 0:
        return ws.gate_z, 0.0
    best = int(np.argmax(ws.keyword))
    rows = [int(m) for m in ws.members[best] if m >= 0]
    return ws.gate_z, keyword_coverage(table, rows, weights)


def gate_logit(z: float, coverage: float, tuning: RankTuning) -> float:
    """Inject only when this is above 0. Without vectors (the embedder is down, or nothing is
    embedded yet) the cosine feature counts as 0."""
    z_term = 0.0 if math.isnan(z) else tuning.gate_cosine * z
    return tuning.gate_bias + z_term + tuning.gate_keyword * coverage
