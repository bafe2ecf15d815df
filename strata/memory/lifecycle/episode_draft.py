"""An episode's text before it is stored (`Draft`): the model's, or without a model the
window's own lines (`extractive_draft`), with a rough salience and the window's key terms.
Split from `strata.memory.lifecycle.episode_cut`, which cuts windows and stores the episodes."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from strata.core.tokens import count_tokens
from strata.core.types import Role, TranscriptRow
from strata.core.words import terms
from strata.memory.rules.extractive import OMITTED, whole_sentences

# An extractive episode is the window's own text: each line and the whole are capped so a
# pasted document cannot make one episode eat a recall budget. Both caps cut at sentence and
# line ends (`extractive.whole_sentences`): a line cut mid-sentence can lose a hypothetical's
# "if" or a question's "?" and read as a plain statement.
EXTRACTIVE_LINE_TOKENS = 80
EXTRACTIVE_TOKENS = 450


def heuristic_salience(rows: Sequence[TranscriptRow]) -> float:
    """A rough importance for extractive episodes: longer self-disclosure with concrete
    details (numbers, dates) matters more than small talk. Always within 0.2–0.9."""
    said = " ".join(r.content for r in rows if r.role is Role.USER)
    words = len(said.split())
    score = 0.25 + 0.35 * min(1.0, words / 150)
    if re.search(r"\d", said):
        score += 0.1
    if re.search(r"\b(i|i'm|my|me|we|our)\b", said, re.IGNORECASE):
        score += 0.1
    if "!" in said:
        score += 0.05
    return round(min(max(score, 0.2), 0.9), 3)


def key_terms(texts: Sequence[str], limit: int = 8) -> list[str]:
    """The most frequent topic words of `texts` (stopwords and very short words dropped)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(t for t in terms(text, max_terms=200) if len(t) > 2 and not t.isdigit())
    return [t for t, _ in counts.most_common(limit)]


@dataclass(frozen=True, slots=True)
class Draft:
    """What a window's episode says, before it gets ids and an embedding."""

    summary: str
    salience: float
    emotion: str
    emotion_intensity: float
    key_terms: tuple[str, ...]
    method: str


def excerpt(lines: Sequence[tuple[str, str]]) -> str:
    """The window's lines as "Speaker: text", each cut at a sentence end within
    EXTRACTIVE_LINE_TOKENS, whole lines kept within EXTRACTIVE_TOKENS (OMITTED after the
    last one kept when some are left out)."""
    out: list[str] = []
    for speaker, said in lines:
        line = f"{speaker}: {whole_sentences(said, EXTRACTIVE_LINE_TOKENS)}"
        if count_tokens("\n".join([*out, line, OMITTED])) > EXTRACTIVE_TOKENS:
            out.append(OMITTED)
            break
        out.append(line)
    return "\n".join(out)


def extractive_draft(lines: Sequence[tuple[str, str]], rows: Sequence[TranscriptRow]) -> Draft:
    return Draft(
        summary=excerpt(lines),
        salience=heuristic_salience(rows),
        emotion="neutral",
        emotion_intensity=0.0,
        key_terms=tuple(key_terms([said for _, said in lines])),
        method="extractive",
    )
