"""Recall's abstention gate: whether the best of an owner's memory answers the query at all.

Pure (numpy, no SQL, no I/O). Four features, each relative to the owner's own memory so that
they mean the same in any memory and with any embedding model:

- `z`: how far the best window's cosine stands out of the owner's windows for this query, in
  standard deviations, less the sqrt(2 ln n) that the best of n unrelated windows reaches
  anyway (`strata.memory.recall.rank.window_scores` computes it);
- `coverage`: the idf-weighted share of the query's words that the best window by keywords
  holds (the one passage of memory that holds most of what was asked). Names count like any
  word: a name this memory never mentions is a word it lacks, with the highest idf. Months,
  weekdays and numbers are left out: memory keeps dates in its headers, not in what was said,
  so the "June" of "what did she do in June?" is no word the answer lacks;
- `stranger`: the query names someone or something this memory never mentions (a capitalised
  word, `strata.memory.rules.names.name_check`). Until issue 27 this vetoed the query;
  now it is a fitted penalty that coverage and a best window standing out can outweigh: in
  real chats most names a person mentions are not in memory yet;
- `only_strangers`: and it names nobody this memory does mention: a question about someone
  this memory has never heard of ("What is Nate's favorite dish?"), not about a person it
  knows beside a new word ("What European countries has Maria been to?");
- `unowned`: it calls something a person this memory knows has ("John's team", "his
  basketball career") that the memory never ties to that person
  (`strata.memory.recall.profiles`): a question about another John.

Inject only when `gate_bias + gate_cosine · z + gate_keyword · coverage − gate_unknown_name ·
stranger − gate_only_strangers · only_strangers − gate_unowned · unowned > 0`. The first four
coefficients come from
logistic regression of the tuning conversations' own questions against questions about other
conversations and the same with their names swapped for this memory's people (so that no name
can give them away), checked leaving one conversation out; the bias is set for a
false-injection rate under 0.10 (docs/recall.md, `bench/recall_gate.py`). `gate_only_strangers`
is the smallest round penalty that silences every tuning question that names only strangers
(bench/NOTEBOOK.md, round eleven); `gate_unowned` the largest that silences none of the tuning
conversations' own questions (bench/NOTEBOOK.md, "The other John").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from strata.memory.recall.rank import (
    GATE_PRIOR_DOCS,
    RankTuning,
    WindowScores,
    keyword_coverage,
)
from strata.memory.rules.names import NameCheck, calendar_stems, without_names
from strata.memory.rules.row_table import RowTable


def gate_idf(table: RowTable, stems: Sequence[str]) -> dict[str, float]:
    """The query's stems weighted by idf over the owner's rows plus `GATE_PRIOR_DOCS` that hold
    none of them: in a memory of a handful of rows a word said twice still outweighs one never
    said. Dates and numbers left out."""
    n = table.n + GATE_PRIOR_DOCS
    out = {}
    for t in stems:
        if t in calendar_stems() or t.isdigit():
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
    rows = [int(m) for m in ws.members[best] if m >= 0 and ws.counts(int(m))]
    return ws.gate_z, keyword_coverage(table, rows, weights)


def gate_logit(z: float, coverage: float, names: NameCheck, tuning: RankTuning,
               unowned: float = 0.0) -> float:
    """Inject only when this is above 0. A query that names someone or something this memory
    never mentions (`names.stranger`) pays a penalty that enough coverage or a best window far
    enough out outweighs, not a veto; one that names nobody this memory knows besides
    (`names.only_strangers`) pays `gate_only_strangers` more; `unowned` is the penalty of a
    query that calls something a known person's that memory never ties to them
    (`strata.memory.recall.profiles`, 0 when it does not). Without vectors (the embedder
    is down, or nothing is embedded yet) the cosine feature counts as 0."""
    z_term = 0.0 if math.isnan(z) else tuning.gate_cosine * z
    return (tuning.gate_bias + z_term + tuning.gate_keyword * coverage
            - tuning.gate_unknown_name * float(names.stranger)
            - tuning.gate_only_strangers * float(names.only_strangers) - unowned)
