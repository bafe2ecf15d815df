"""Whose words a claim borrows, and whether it says anything at all: two checks the grounding
rule (`strata.memory.checks.grounding`) makes of a claim about the person.

- **Borrowed from someone else's fact.** A stored fact can be about another person ("Brother
  Ravi lives in Tartu"). A portrait or reflection sentence that takes such a fact's words
  without its subject ("Alice is a pharmacist and lives in Tartu") moves the brother's home
  to the person: every word matched, yet the claim is false. Seen with the embedded 0.5B in
  the truth benchmark. A content word of the sentence that only facts about someone else
  hold must come with that someone (the kin word or their name).
- **Lent to someone else.** The other way round: "My brother Ravi is allergic to kiwi and has
  a cat named Ziggy", written from "Is allergic to kiwi" and "Has a cat named Ziggy" (the
  person's) and "Brother Ravi lives in Tartu" (the truth benchmark's portrait). A sentence
  about someone else may not carry a content word that only the person's own facts hold.
- **Chat filler.** "ok, bye" is in the person's words, twice, and the pattern job called it a
  habit. Words like these carry nothing about a person.

Pure functions over text, no SQL.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from strata.core.words import SURFACE_WORD
from strata.memory.checks.claim_words import surface
from strata.memory.rules.names import names_in
from strata.memory.rules.text import stem, tokens

# Words that make a fact someone else's when they are its subject.
_KIN = """brother sister mum mom mother dad father wife husband son daughter friend boss partner
    girlfriend boyfriend colleague coworker cousin aunt uncle grandma grandmother grandpa
    grandfather niece nephew neighbour neighbor roommate flatmate fiance fiancee child kid"""
# Said in every chat, about nobody.
_FILLER = """ok okay bye goodbye hi hello hey thanks thank cheers yes yeah yep no nope sure
    cool fine good great nice lol haha hmm night morning see later soon well right alright"""
_POSSESSIVE = {"my", "her", "his", "their", "the", "a", "an", "our", "your"}


@functools.cache
def _kin() -> frozenset[str]:
    return frozenset(stem(w) for w in _KIN.split())


@functools.cache
def _filler() -> frozenset[str]:
    return frozenset(t for w in _FILLER.split() for t in tokens(w)) | frozenset(_FILLER.split())


def only_filler(text: str) -> bool:
    """Whether every word of `text` is chat filler ("ok, bye", "thanks!"): a claim about
    nothing."""
    words = surface(text)
    return bool(words) and all(w in _filler() or stem(w) in _filler() for w in words)


def _someone_else(fact: str, own: Collection[str], names: Collection[str]) -> frozenset[str]:
    """The words naming whom `fact` is about when that is someone other than the person (its
    subject: "Brother Ravi lives …" → {brother, ravi}; "Ravi lives …" → {ravi}, when Ravi is
    a name the facts use mid-sentence, `names`: any sentence starts with a capital); empty
    when the fact is the person's own ("Is a pharmacist", "Has a brother named Ravi")."""
    words = SURFACE_WORD.findall(fact)
    while words and words[0].lower() in _POSSESSIVE:
        words = words[1:]
    if not words:
        return frozenset()
    first = words[0]
    if stem(first.lower()) in _kin():
        marks = {stem(first.lower())}
        if len(words) > 1 and words[1][:1].isupper():
            marks.add(words[1].lower())
        return frozenset(marks)
    if first.lower() in names and first.lower() not in own:
        return frozenset({first.lower()})
    return frozenset()


@dataclass(frozen=True, slots=True)
class _Held:
    """One fact as both checks read it: its content words, whom it is about when that is
    someone else (`_someone_else`), and its words as written and stemmed."""

    content: frozenset[str]
    about: frozenset[str]
    words: frozenset[str]


def _read(facts: Sequence[str], own_names: Collection[str]) -> tuple[set[str], set[str],
                                                                      list[_Held]]:
    """The person's own name words, the names the facts use, and each fact read."""
    own = {w.lower() for name in own_names for w in SURFACE_WORD.findall(name)}
    names = {n for f in facts for n in names_in(f)}
    held = [_Held(frozenset(tokens(f)), _someone_else(f, own, names),
                  frozenset({w.lower() for w in SURFACE_WORD.findall(f)} | set(tokens(f))))
            for f in facts]
    return own, names, held


def borrowed(text: str, facts: Sequence[str], own_names: Collection[str] = ()) -> bool:
    """Whether `text` takes a word that only facts about someone else hold, without naming
    that someone (their kin word or name)."""
    said = {w.lower() for w in SURFACE_WORD.findall(text)}
    said |= {stem(w) for w in said}
    _, _, held = _read(facts, own_names)
    for word in set(tokens(text)) - _filler():
        holders = [h.about for h in held if word in h.content]
        if holders and all(holders) and not any(marks & said for marks in holders):
            return True
    return False


def lent(text: str, facts: Sequence[str], own_names: Collection[str] = ()) -> bool:
    """Whether `text`, about someone else (its subject a kin word or another's name), takes a
    word that only facts about the person themselves hold."""
    own, names, held = _read(facts, own_names)
    subject = _someone_else(text, own, names)
    if not subject:
        return False
    for word in set(tokens(text)) - _filler() - subject:
        holders = [h for h in held if word in h.content]
        # Held, and only by the person's own facts that do not name this someone either
        # ("Has a brother named Ravi" is about Ravi too).
        if holders and not any(h.about or (subject & h.words) for h in holders):
            return True
    return False
