"""What counts as a fact candidate's evidence: the person's own words, as an assertion.

`evidence_problem` refuses evidence that reads as a question, a hypothetical or reported
speech; `find_evidence` finds the person's lines that hold it (by word overlap).

Speaker labels and the assistant's lines (`Speakers`, `echoes_assistant`): a small model copies
the excerpt's framing into its answer, the "person>" / "assistant>" line prefixes or the "u3:" /
"Strata:" speaker labels of an episode summary, and sometimes runs its evidence on into the
assistant's reply ("I studied chemistry, and I see"). The
person's own label is taken off a candidate's text and evidence; evidence that carries another
speaker's label, or words of the assistant's lines that the person did not say, is refused:
what the assistant said is never evidence about the person.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from strata.core.words import WORD
from strata.memory.checks.claim_words import SPEAKER_LABEL
from strata.memory.rules.fact_types import normalise_text

# Share of the evidence's words that must occur in the person's own lines of the episode.
EVIDENCE_OVERLAP = 0.6
_QUESTION = re.compile(r"\?\s*$")
_HYPOTHETICAL = re.compile(
    r"\b(what if|suppose|supposing|imagine|if i|if we|i might|i may|maybe i|perhaps i|"
    r"i wonder|would i|should i|could i|someday|one day i)\b",
    re.IGNORECASE,
)
# "<someone> said/told/…": the person relays another's words or views ("I said" is fine).
_REPORTED = re.compile(
    r"\b(\w+)\s+(said|says|told|tells|thinks|think|believes|claims|reckons|wrote|writes)\b",
    re.IGNORECASE,
)
_REPORTED_OTHER = re.compile(r"\baccording to\b", re.IGNORECASE)

_OWN = ("person", "user")
_OTHER = ("assistant",)
RUN = 4  # words in a row, copied from the assistant's line, that make evidence the assistant's


def evidence_problem(evidence: str) -> str | None:
    """Why `evidence` does not read as an assertion in the person's own voice, or None."""
    if not evidence.strip():
        return "no evidence"
    if _QUESTION.search(evidence):
        return "question"
    if _HYPOTHETICAL.search(evidence):
        return "hypothetical"
    if _REPORTED_OTHER.search(evidence):
        return "quote"
    for who, _verb in _REPORTED.findall(evidence):
        if who.lower() not in ("i", "i've", "we"):
            return "quote"
    return None


def _words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def find_evidence(evidence: str, lines: Sequence[tuple[int, str]]) -> list[int]:
    """Ids of the person's lines that contain `evidence` (by word overlap), best first.

    Empty when the person never said it: the candidate is then not theirs to assert.
    """
    wanted = _words(evidence)
    if not wanted:
        return []
    norm = normalise_text(evidence)
    scored = []
    for row_id, text in lines:
        if norm and norm in normalise_text(text):
            scored.append((1.0, row_id))
            continue
        have = set(_words(text))
        share = sum(1 for w in wanted if w in have) / len(wanted)
        if share >= EVIDENCE_OVERLAP:
            scored.append((share, row_id))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [r for _, r in scored]


def _pattern(labels: Iterable[str]) -> re.Pattern[str] | None:
    alts = sorted({re.escape(label) for label in labels if label}, key=len, reverse=True)
    if not alts:
        return None
    return re.compile(rf"(?<![\w'])(?:{'|'.join(alts)})\s*[:>]\s*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Speakers:
    """The labels of one extraction's excerpts: the person's own and everyone else's."""

    own: frozenset[str]
    others: frozenset[str]

    @classmethod
    def of(cls, person_name: str, summaries: Sequence[str]) -> Speakers:
        found = {m.group(1) for s in summaries for m in SPEAKER_LABEL.finditer(s)}
        own = {person_name, *_OWN}
        others = {label for label in found if label.lower() not in {o.lower() for o in own}}
        return cls(frozenset(own), frozenset(others | set(_OTHER)))

    def strip(self, text: str) -> str:
        """`text` without any speaker label (a fact's text reads as a statement)."""
        pattern = _pattern(self.own | self.others)
        return " ".join((pattern.sub(" ", text) if pattern else text).split())

    def evidence(self, text: str) -> str | None:
        """`text` without the person's own labels; None when it carries another speaker's
        label (it runs into a line that is not the person's)."""
        other = _pattern(self.others)
        if other is not None and other.search(text):
            return None
        own = _pattern(self.own)
        return " ".join((own.sub(" ", text) if own else text).split())


def _runs(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def echoes_assistant(evidence: str, person_lines: Sequence[str],
                     assistant_lines: Sequence[str]) -> bool:
    """Whether `evidence` carries words of the assistant's lines that the person's lines
    (those it was found in) lack: a whole short assistant line ("I see."), or `RUN` words in
    a row of a longer one."""
    said = normalise_text(evidence).split()
    theirs = " ".join(normalise_text(line) for line in person_lines)
    if not said:
        return False
    joined = f" {' '.join(said)} "
    for line in assistant_lines:
        words = normalise_text(line).split()
        if 2 <= len(words) < RUN and f" {' '.join(words)} " in joined \
                and f" {' '.join(words)} " not in f" {theirs} ":
            return True
        copied = _runs(said, RUN) & _runs(words, RUN)
        if copied - _runs(theirs.split(), RUN):
            return True
    return False


_SMALL_TALK = re.compile(
    r"^\W*(good (morning|night|evening|afternoon|day)|hi|hello|hey|thanks|thank you|ok|okay|"
    r"bye|see you|lol|haha|wow|cool|nice|great|sure|yes|no|yeah|nope)\b[\W\s]*$",
    re.IGNORECASE,
)


_COMMON = frozenset(("the", "and", "has", "had", "have", "was", "are", "for", "her", "his",
                     "she", "him", "you", "not", "but", "who", "its", "with", "that", "this"))


def text_problem(text: str, evidence: str) -> str | None:
    """Why a fact's `text` does not rest on its `evidence` (None: it does). The evidence must
    be more than small talk ("Good morning!"), and the text must share a word (not a common
    one), or a number, with it: a model's "diet" for "I'm vegetarian" says nothing the
    person said."""
    if _SMALL_TALK.match(evidence):
        return "small talk"
    said = set(_words(evidence))
    if not any(((len(w) >= 3 and w not in _COMMON) or w.isdigit()) and w in said
               for w in _words(text)):
        return "text not in its evidence"
    return None


def alike(a: str, b: str) -> bool:
    """Whether at least half the longer words (4+ letters) of `b` are in `a`."""
    words = {w for w in normalise_text(b).split() if len(w) >= 4}
    have = set(normalise_text(a).split())
    return bool(words) and len(words & have) * 2 >= len(words)
