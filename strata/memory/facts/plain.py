"""Facts read without a model from plain first-person statements.

"I live in Lyon", "my sister Ines lives in Porto", "I'm allergic to peanuts", "I work as a
pharmacist", "I have a dog called Rex": a small model often fails on exactly these, and they
are a person's basic facts. This module recognises a narrow set of sentence forms and gives
them as `Candidate`s, whose evidence is the sentence itself, so they go through the same
checks as the model's candidates.

Precision over recall: a wrong stored fact is worse than a missing one. A whole message is
skipped when it reads as a joke ("lol", "just kidding", "/s"); a sentence is skipped when it is
a question, a hypothetical or wish ("if I moved…", "I'd love to…"), reported speech ("my boss
said…"), negated (except "I don't eat/drink…", a diet), or about a passing moment ("today",
"right now"). "Actually …" / "No, …" before a statement makes it a correction. Imports
`memory.facts.candidates` and `statement_kind` only; whether a sentence
is a plain statement at all is `statement_kind`'s.
"""

from __future__ import annotations

import re

from strata.memory.facts.candidates import Candidate
from strata.memory.facts.plain_forms import RULES, Found
from strata.memory.rules.statement_kind import (
    as_corrected,
    is_joke,
    is_passing,
    sentences,
    statement_problem,
    taken_back,
)

KIND = "user_specific"
CONFIDENCE = 0.8

_NEGATION = re.compile(r"\b(not|never|no longer|anymore|any more|nobody|nothing)\b|n't\b",
                       re.IGNORECASE)
_CORRECTION = re.compile(r"^(actually|no|nope|sorry|correction|i mean|wait)\b[,:]?\s*",
                         re.IGNORECASE)
_AND_I = re.compile(r",?\s+and\s+(?=(?:i|i'm|i've|my)\b)", re.IGNORECASE)
_FILLER = re.compile(r"^(oh|ah|well|so|also|and|anyway|btw|by the way|yes|yeah|ok|okay|"
                     r"honestly|hi|hey|hello|fyi)"
                     r"\b[,:]?\s*", re.IGNORECASE)


def _units(text: str) -> list[tuple[str, str]]:
    """The line's sentences as (what to read, what was said): a sentence whose year is taken
    back in the next one is read once, with the year that stands, and cites both."""
    said = list(sentences(text))
    out, i = [], 0
    while i < len(said):
        unit = said[i]
        if i + 1 < len(said) and not taken_back(unit) and taken_back(
                f"{unit} {said[i + 1]}"):
            unit, i = f"{unit} {said[i + 1]}", i + 1
        read = as_corrected(unit)
        out += [(s, unit if read != unit else s) for s in sentences(read)]
        i += 1
    return out


def _clauses(sentence: str) -> list[str]:
    """"I'm allergic to peanuts and I work as a pharmacist" states two things."""
    return [c for c in _AND_I.split(sentence) if c.strip()]


def _facts_of(sentence: str) -> tuple[Found, bool]:
    """The facts a plain sentence states, and whether it is a correction."""
    body, correction = sentence, False
    while True:
        m = _CORRECTION.match(body) or _FILLER.match(body)
        if not m or not m.group(0):
            break
        correction = correction or bool(_CORRECTION.match(body))
        body = body[m.end():]
    body = body.rstrip(".!;")
    negated = bool(_NEGATION.search(body))
    for pattern, read in RULES:
        m = pattern.search(body)
        if m is None:
            continue
        if negated and read.__name__ not in ("_diet_not", "_taste"):
            return [], False  # "I don't live in Paris" states no home
        found = read(m)
        if found:
            return found, correction
    return [], False


def plain_candidates(episode_id: int, text: str) -> list[Candidate]:
    """Candidates for the facts `text` (one line of the person's) states plainly."""
    if is_joke(text):
        return []
    out = []
    for sentence, evidence in _units(text):
        if statement_problem(sentence):
            continue
        for clause in _clauses(sentence):
            found, correction = _facts_of(clause)
            out += [Candidate(
                kind=KIND, text=fact, subject=subject, attribute=attribute,
                modality="assertion", asserted_by_person=True, durable=True,
                correction=correction, evidence=evidence, episode=episode_id,
                confidence=CONFIDENCE) for subject, attribute, fact in found]
    return out


def lasting(evidence: str) -> bool | None:
    """Whether the statement `evidence` is lasting, where code can tell: False for a
    passing moment ("today", "right now"), True for a plain statement of a lasting kind
    (where one lives, works, family, pets, health, diet…), None when code cannot tell."""
    if is_passing(evidence):
        return False
    if any(_facts_of(s)[0] for s in sentences(evidence) if not statement_problem(s)):
        return True
    return None
