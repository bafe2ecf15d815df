"""Whether a sentence of the person's is a plain statement of their own: not a question, a
hypothetical or wish, reported speech, a passing moment, or (for a whole line) a joke. The
model-free fact reader (`plain_facts`) and extraction's check on the line around a quote
(`fact_batch.line_problem`) both ask it. Pure: no SQL, no model."""

from __future__ import annotations

import re
from collections.abc import Iterator

_SENTENCES = re.compile(r"[^.!?\n]+[.!?]*")
JOKE = re.compile(
    r"\b(lol|lmao|rofl|haha\w*|hehe\w*|jk|just kidding|kidding|joking|yeah right|as if)\b"
    r"|/s\b|[\U0001F602\U0001F923\U0001F61C\U0001F643\U0001F609\U0001F60F]"
    r"|^\s*sure,? and\b",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^(do|does|did|am|is|are|was|were|can|could|should|would|will|shall|may|have|has|"
    r"what|what's|where|when|why|who|whom|which|how)\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"\b(if|unless|suppose|supposing|imagine|pretend|maybe|perhaps|might|i may|would|could|"
    r"should|wish|hope|someday|one day|thinking about|thinking of|considering|"
    r"plan to|planning|want to|wanna|going to|gonna|in another life|i'd|i'll|will)\b",
    re.IGNORECASE,
)
_REPORTED = re.compile(
    r"\b(said|say|says|saying|told|tell|tells|telling|think|thinks|thought|believe|believes|"
    r"claim|claims|claimed|reckon|reckons|according|apparently|heard|calls me|called me)\b"
    r"|[\"“”«»]",
    re.IGNORECASE,
)
TRANSIENT = re.compile(
    r"\b(today|tonight|right now|at the moment|this (morning|afternoon|evening|week|"
    r"weekend)|yesterday|tomorrow|just got|for now)\b",
    re.IGNORECASE,
)


def sentences(text: str) -> Iterator[str]:
    for m in _SENTENCES.finditer(text):
        if m.group(0).strip():
            yield m.group(0).strip()


def statement_problem(sentence: str) -> str | None:
    """Why `sentence` is not a plain statement of the person's own (None: it is one)."""
    body = sentence.rstrip()
    if body.endswith("?") or _QUESTION_START.search(body):
        return "question"
    if _HYPOTHETICAL.search(body):
        return "hypothetical"
    if _REPORTED.search(body):
        return "quote"
    if TRANSIENT.search(body):
        return "passing"
    return None


def context_problem(evidence: str, line: str) -> str | None:
    """Why the person's `line` holding `evidence` makes it no assertion: a joke, or a sentence
    with most of its words that is not a plain statement ("I'd need a warmer coat", quoted
    from "If I moved to Oslo, I'd need a warmer coat", is a hypothetical). None: neither."""
    if JOKE.search(line):
        return "joke"
    wanted = {w for w in re.findall(r"\w+", evidence.lower()) if len(w) >= 3}
    for sentence in sentences(line):
        have = set(re.findall(r"\w+", sentence.lower()))
        if wanted and len(wanted & have) * 2 >= len(wanted):
            problem = statement_problem(sentence)
            if problem:
                return problem
    return None


def is_joke(text: str) -> bool:
    return bool(JOKE.search(text))


def is_passing(text: str) -> bool:
    """About a passing moment ("today", "right now")."""
    return bool(TRANSIENT.search(text))


# "I was born in 1987. No wait, typo: 1983." / "Born in 1987, I mean 1983": a year taken back
# in the next breath. The fact is read with the year that stands; its evidence stays the
# words as said, both years in them.
_TAKEN_BACK = re.compile(
    r"\b(?P<old>\d{4})\b(?P<gap>[^\d.!?]{0,30}?)[.,;:]?\s*"
    r"(?:no wait|wait|no|sorry|i mean|correction|typo|oops)\b[^\d.!?]{0,20}?\b(?P<new>\d{4})\b",
    re.IGNORECASE)


def taken_back(text: str) -> set[str]:
    """The years `text` takes back in the next breath ("1987" of "born in 1987, I mean 1983")."""
    return {m["old"] for m in _TAKEN_BACK.finditer(text)}


def as_corrected(text: str) -> str:
    """`text` with each year taken back replaced by the one that stands, the taking back
    dropped ("born in 1987, I mean 1983" -> "born in 1983")."""
    return _TAKEN_BACK.sub(lambda m: m["new"] + m["gap"], text)
