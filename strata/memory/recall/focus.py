"""Query-focused excerpts of long notes, for recall.

A roll-up parent carries the meaning of many conversations once their rows are pruned
(strata.memory.lifecycle.rollup), so its extractive summary is long. Quoted whole, one parent would
spend half a 1,000-token recall budget on sentences that have nothing to do with the question, and
its one line with the answer would be scored as a small part of a long text. Recall instead shows
(and scores) a long note by its sentences that hold the query's words — the idf-weighted terms
recall already computed for the windows — within `NOTE_TOKENS` (a quarter of the default budget), in
their original order, with "…" where sentences were skipped. A short note is shown whole.
Imports `bot` leaf modules and `memory`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from strata.core.tokens import count_tokens, truncate_to_tokens
from strata.memory.recall.types import Candidate
from strata.memory.rules.extractive import split_units
from strata.memory.rules.text import tokens

GAP = "…"
# A note longer than this is shown by its sentences that hold the query's words.
NOTE_TOKENS = 250


def excerpt(text: str, idf: Mapping[str, float], max_tokens: int) -> str:
    """`text` if it fits `max_tokens`, else its sentences richest in the query's terms
    (`idf`: query stem → weight) that fit, in order; its beginning when no sentence holds a
    query term."""
    if count_tokens(text) <= max_tokens:
        return text
    units = split_units([text])
    scored: list[tuple[float, int]] = []
    for i, unit in enumerate(units):
        found = set(tokens(unit)) & idf.keys()
        score = sum(idf[t] for t in found)
        if score > 0:
            scored.append((score, i))
    if not scored:  # only its meaning matches (the vector): its beginning
        return truncate_to_tokens(text, max_tokens)
    ranked = [i for _, i in sorted(scored, key=lambda s: (-s[0], s[1]))]
    chosen: list[int] = []
    left = max_tokens
    for i in ranked:
        cost = count_tokens(units[i]) + 2  # its line, and a gap line it may open
        if cost <= left:
            chosen.append(i)
            left -= cost
    if not chosen:  # even the best sentence is too long: cut it
        return truncate_to_tokens(units[ranked[0]], max_tokens)
    return _joined(units, sorted(chosen))


def _joined(units: list[str], chosen: list[int]) -> str:
    """The chosen sentences one a line, a gap line wherever sentences were left out."""
    lines: list[str] = []
    previous = -1
    for i in chosen:
        if i != previous + 1:
            lines.append(GAP)
        lines.append(units[i])
        previous = i
    if previous != len(units) - 1:
        lines.append(GAP)
    return "\n".join(lines)


def focus(c: Candidate, idf: dict[str, float]) -> Candidate:
    """A long note (a roll-up parent) as its sentences that hold the query's words."""
    text = excerpt(c.text, idf, NOTE_TOKENS)
    return c if text == c.text else replace(c, text=text)
