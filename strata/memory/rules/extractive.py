"""Extractive summaries without a model: the most distinct sentences of some texts, chosen by
maximal marginal relevance (MMR) within a word budget and given back in their original order.

The fallback of roll-up parents (strata.memory.lifecycle.rollup) and continuity summaries
(strata.memory.lifecycle.compaction) when no model is configured or the model's answer is unusable.
Taking the first sentences of each child would keep greetings and lose the one line with the date;
MMR instead scores each sentence by how central it is to the whole and how specific it is (names,
places, numbers, dates: capitalised words inside a sentence and digits), and at each step takes the
best one minus its overlap with what is already taken, so near-repeats across children are skipped.
A "Name: …" speaker prefix of a line is carried onto each of its sentences, so a kept
sentence still says who said it.

Every cut is at a sentence end (`whole_sentences`): a text cut mid-sentence can lose the "if"
of a hypothetical, the "?" of a question or the closing mark of a quote, and what is left
then reads as a plain statement. A question, hypothetical or quote is kept whole or left out;
only a plain statement longer than the whole budget is cut at a word. Pure functions; imports
`strata.core.words`, `strata.core.tokens` and `statement_kind` only.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from strata.core.tokens import count_tokens, truncate_to_tokens
from strata.core.words import WORD, terms
from strata.memory.rules.statement_kind import statement_problem

_SENTENCE = re.compile(r"(?<=[.!?…])\s+")
# A sentence end for cutting: its closing quote or bracket stays with it.
_END = re.compile(r"(?<=[.!?…])([\"'”’»)]*)\s+")
_QUOTES = re.compile(r"[\"“”«»]")
OMITTED = "…"  # stands where sentences were left out
_SPEAKER = re.compile(r"^([^:\n]{1,40}):\s+(?=\S)")
# Relevance vs. novelty: below 1, a sentence that repeats a chosen one loses to a fresh one.
# Novelty weighs more than relevance: what a summary must carry is many different facts (who
# did what, where, when), and on the lived LoCoMo replay (conversations 0–2) roll-up parents
# chosen with 0.3 held more of the answers whose rows were pruned than with 0.6.
LAMBDA = 0.3


@dataclass(frozen=True, slots=True)
class _Unit:
    order: int
    text: str
    words: int
    terms: frozenset[str]
    specific: int  # digits and capitalised words after the first, within the sentence


def _specific(body: str) -> int:
    tokens = WORD.findall(body)
    return sum(1 for i, t in enumerate(tokens)
               if any(c.isdigit() for c in t) or (i > 0 and t[:1].isupper()))


def split_units(texts: Sequence[str]) -> list[str]:
    """Sentences of `texts` in order, each line's speaker prefix carried onto its sentences."""
    out: list[str] = []
    for text in texts:
        for line in text.splitlines():
            line = " ".join(line.split())
            if not line:
                continue
            match = _SPEAKER.match(line)
            prefix, body = (match.group(0), line[match.end():]) if match else ("", line)
            out += [prefix + s for s in _SENTENCE.split(body) if s.strip()]
    return out


def _units(texts: Sequence[str]) -> list[_Unit]:
    seen: set[str] = set()
    units: list[_Unit] = []
    for sentence in split_units(texts):
        key = sentence.lower()
        if key in seen:
            continue
        seen.add(key)
        body = _SPEAKER.sub("", sentence)
        units.append(_Unit(len(units), sentence, len(sentence.split()),
                           frozenset(terms(body, max_terms=200)), _specific(body)))
    return units


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / math.sqrt(len(a) * len(b))


def select(texts: Sequence[str], words: int) -> list[str]:
    """The sentences an extractive summary of `texts` keeps within `words` words, in order."""
    units = _units(texts)
    if sum(u.words for u in units) <= words:
        return [u.text for u in units]
    counts: Counter[str] = Counter(t for u in units for t in u.terms)
    norm = math.sqrt(sum(c * c for c in counts.values())) or 1.0

    def relevance(u: _Unit) -> float:
        central = (sum(counts[t] for t in u.terms) / (norm * math.sqrt(len(u.terms)))
                   if u.terms else 0.0)
        return 0.5 * central + 0.5 * min(u.specific / 3, 1.0)

    base = {u.order: relevance(u) for u in units}
    chosen: list[_Unit] = []
    left = words
    pool = [u for u in units if u.terms]
    while pool:
        fitting = [u for u in pool if u.words <= left]
        if not fitting:
            break
        best = max(fitting, key=lambda u: (
            LAMBDA * base[u.order]
            - (1 - LAMBDA) * max((_overlap(u.terms, c.terms) for c in chosen), default=0.0),
            -u.order))
        chosen.append(best)
        left -= best.words
        pool = [u for u in pool if u is not best]
    if not chosen and units:
        # Every sentence is longer than the budget: cut the best plain statement at a word
        # (a question, hypothetical or quote cut short would read as a statement).
        plain = [u for u in units if _cuttable(_SPEAKER.sub("", u.text))]
        if not plain:  # only OMITTED: a summary that says nothing, so its caller moves on
            return [OMITTED]
        best = max(plain, key=lambda u: (base[u.order], -u.order))
        return [" ".join(best.text.split()[:words]) + " " + OMITTED]
    return [u.text for u in sorted(chosen, key=lambda u: u.order)]


def _cuttable(sentence: str) -> bool:
    """Whether a sentence may be cut at a word: a plain statement, no quotation in it."""
    return statement_problem(sentence) in (None, "passing") and not _QUOTES.search(sentence)


def _open_quote(text: str) -> bool:
    """Whether `text` opens a quotation it does not close."""
    straight = text.count('"') % 2 == 1
    return straight or text.count("“") > text.count("”") or text.count("«") > text.count("»")


def end_sentences(text: str) -> list[str]:
    """`text`'s sentences, each with its closing quote or bracket."""
    parts = _END.split(" ".join(text.split()))
    # split() with a group gives [sentence, closer, sentence, closer, ...].
    out = [parts[i] + (parts[i + 1] if i + 1 < len(parts) else "")
           for i in range(0, len(parts), 2)]
    return [s for s in out if s.strip()]


def whole_sentences(text: str, tokens: int) -> str:
    """`text` within `tokens` tokens, cut at a sentence end (OMITTED marks the cut). A
    quotation is never left open; when even the first sentence is over the budget, a plain
    statement is cut at a word and anything else is left out (OMITTED alone)."""
    text = " ".join(text.split())
    if count_tokens(text) <= tokens:
        return text
    kept: list[str] = []
    for sentence in end_sentences(text):
        if count_tokens(" ".join([*kept, sentence, OMITTED])) > tokens:
            break
        kept.append(sentence)
    while kept and _open_quote(" ".join(kept)):
        kept.pop()
    if kept:
        return " ".join([*kept, OMITTED])
    first = end_sentences(text)[0]
    return truncate_to_tokens(first, tokens) if _cuttable(first) else OMITTED


def summarise(texts: Sequence[str], words: int) -> str:
    """`select` joined into one text ("" when `texts` hold no words)."""
    return " ".join(select(texts, words))
