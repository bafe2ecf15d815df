"""Extra query text for recall: lines written in the words the person would have used
(`also` of `strata.memory.recall.search.Recall.search`), such as the hypothetical turn the turn
path asks the chat model for (`strata.bot.hypothetical`). Memory never calls a model: it only
searches with what it is given.

A hint widens what recall looks for, not what counts as found: the windows are ranked with
the question's words and the hint's, and with the mean of their vectors, but the gate's
keyword coverage and its name checks read the question's own words (`GateWords`; unless
`hint_coverage`), so a hint cannot vouch for itself: a line the model made up that matches
nothing specific stays silent. Only the mean vector standing out can open the gate.
Pure (numpy, no I/O).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from strata.memory.recall.bridge import Bridge, Whose, bridged_coverage, bridged_stems
from strata.memory.recall.gate import gate_idf
from strata.memory.recall.rank import RankTuning, window_scores
from strata.memory.rules.row_table import F64, RowTable
from strata.memory.rules.text import query_stems

# A hint is one short line; anything longer is cut to this many characters before it is
# searched (a model that rambles must not turn the query into its own essay).
HINT_CHARS = 200


def clean_hints(also: Sequence[str]) -> tuple[str, ...]:
    """The hints worth searching with: stripped, non-empty, cut to `HINT_CHARS`, distinct."""
    out = [a.strip()[:HINT_CHARS] for a in also]
    return tuple(dict.fromkeys(a for a in out if a))


def hinted_stems(stems: Sequence[str], also: Sequence[str]) -> list[str]:
    """The question's stems, then the hints' stems it lacks, in order."""
    return list(dict.fromkeys([*stems, *query_stems(" ".join(also))]))


def hinted_text(query: str, also: Sequence[str]) -> str:
    """The text the keyword searches of other memories (episodes, facts) get."""
    return " ".join((query, *also))


def mean_vector(vectors: Sequence[npt.NDArray[np.float32]]) -> npt.NDArray[np.float32]:
    """The L2-normalised mean of the (L2-normalised) question and hint vectors: each counts
    once, as in hypothetical-document search."""
    total = np.sum(np.stack([np.asarray(v, dtype=np.float32) for v in vectors]), axis=0)
    norm = float(np.linalg.norm(total))
    return (total / norm).astype(np.float32) if norm > 0 else total.astype(np.float32)


@dataclass(frozen=True, slots=True)
class GateWords:
    """The words whose coverage the gate reads when the ranking searched with more (a hint's
    words, a bridge's): the question's own `stems`, each bridged stem found where a word
    stating its kind is (`strata.memory.recall.bridge`)."""

    stems: tuple[str, ...]
    bridges: Mapping[str, Bridge] = field(default_factory=dict)


def gate_words(asked: Sequence[str], also: Sequence[str], bridges: Mapping[str, Bridge],
               hint_coverage: bool) -> GateWords | None:
    """What the gate reads for a search with hints `also` and `bridges` (None: the ranking's
    own words, as without either). `hint_coverage`: a hint's words count too."""
    if not bridges and (not also or hint_coverage):
        return None
    return GateWords(tuple(hinted_stems(asked, also) if hint_coverage else asked), bridges)


def own_coverage(table: RowTable, words: GateWords, query: str,
                 mask: npt.NDArray[np.bool_], recency: F64, rank: RankTuning,
                 scored: npt.NDArray[np.bool_] | None, owner: Whose | None = None) -> float:
    """The gate's coverage of the question's own words, over the best window by those words
    (and their bridges) alone: what the gate reads when a hint widened the ranking, so that
    the hint's words, which the model made up, never count as the question found. `owner`:
    the rows a bridged kind counts in (`strata.memory.recall.bridge.whose`). A bridge only
    adds: never less than the question's words alone reach, since the best window by a
    bridge's words may be another speaker's ("Which cities has Yara been to?" of a chat where
    the other person names more cities)."""
    stems = list(words.stems)

    def reach(bridges: Mapping[str, Bridge]) -> float:
        own = window_scores(table, bridged_stems(stems, bridges), None, mask, recency,
                            rank, None, scored)
        if own.bm25_best <= 0:
            return 0.0
        best = int(np.argmax(own.keyword))
        rows = [int(m) for m in own.members[best] if m >= 0 and own.counts(int(m))]
        return bridged_coverage(table, rows, gate_idf(table, stems), bridges, owner)

    return max(reach(words.bridges), reach({})) if words.bridges else reach({})
