"""Whose words a summary tells, and in what frame: one speaker's words given to another
(`misattributed`), a question, hypothetical or someone's reported words told as plain fact
(`unframed`, `unquoted`). Checks of `strata.memory.checks.grounding.check_summary` (which names
the reason: MISATTRIBUTED, UNFRAMED) when the speakers are known.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from strata.memory.checks.claim_words import content_words, sentences, surface
from strata.memory.checks.fact_evidence import evidence_problem
from strata.memory.rules.text import stem, tokens


def misattributed(text: str, speakers: Mapping[str, Sequence[str]]) -> bool:
    """Whether a sentence names exactly one speaker and its content words come only
    from other speakers' lines, none from that speaker's own lines or from lines that mention
    them ("Bob is allergic to peanuts" when only Carol said so). What it misses: a sentence
    naming two speakers, a pronoun ("he"), and a claim mixing both speakers' words."""
    by_name = {name.lower(): lines for name, lines in speakers.items() if name.strip()}
    for sentence in sentences(text):
        named = {w for w in surface(sentence) if w.removesuffix("'s") in by_name}
        named = {w.removesuffix("'s") for w in named}
        if len(named) != 1:
            continue
        who = named.pop()
        words = content_words(sentence) - set(tokens(" ".join(by_name)))
        own = set(tokens(" ".join(by_name[who])))
        about = set(tokens(" ".join(line for lines in by_name.values() for line in lines
                                    if who in surface(line))))
        others = set(tokens(" ".join(line for name, lines in by_name.items() if name != who
                                     for line in lines)))
        if len(words & others) >= 2 and not words & (own | about):
            return True
    return False


# Words that keep a sentence's frame: it tells a question, a wish or someone's words as such.
_FRAME = re.compile(
    r"\b(if|would|might|could|maybe|perhaps|consider\w*|wonder\w*|ask\w*|question\w*|"
    r"hypothetical\w*|imagin\w*|dream\w*|idea|said|says|told|tells|according|quot\w*|"
    r"whether|wants? to know|curious)\b", re.IGNORECASE)


def unframed(text: str, sources: Sequence[str]) -> bool:
    """Whether a sentence's content words come from a question, a hypothetical or
    someone else's reported words and from no plain statement, and the sentence keeps none of
    that frame ("Dag plans to move to Oslo" of "if I moved to Oslo I'd buy a boat"). Which
    lines are framed is read as for facts (`fact_evidence.evidence_problem`). Only the framing
    speaker's own plain lines make the words a fact: the bot's "moving to Oslo is an excellent
    idea" does not make "if I moved to Oslo" a plan."""
    framed: dict[str, set[str]] = {}
    plain: dict[str, set[str]] = {}
    for line in sources:
        speaker, colon, said = line.partition(":")
        speaker, said = (speaker, said) if colon else ("", line)
        (framed if evidence_problem(said) is not None else plain).setdefault(
            speaker, set()).update(tokens(said))
    for sentence in sentences(text):
        if _FRAME.search(sentence):
            continue
        words = content_words(sentence)
        if any((words & heard) - plain.get(speaker, set()) for speaker, heard in framed.items()):
            return True
    return False


# A verb that tells someone's words as theirs; and "<who> said/told ..." in a source line.
_SAYING = re.compile(r"\b(said|says|say|told|tells|tell|according|quot\w*|claim\w*|"
                     r"reckon\w*)\b", re.IGNORECASE)
_REPORTER = re.compile(r"\b(\w+)\s+(?:said|says|told|tells|thinks|believes|claims|reckons|"
                       r"wrote|writes)\b", re.IGNORECASE)


def unquoted(text: str, sources: Sequence[str]) -> bool:
    """Whether a sentence tells someone else's reported words (two content words or
    more of a quoted line that no plain line holds) with neither a verb of saying nor who
    said them: "Dag asks about his move to Cork" of "My brother told me he moved to Cork"
    (a question's frame does not make the brother's move Dag's). `unframed` lets any frame
    word pass; this one wants the quote's own. Only the quoting speaker's own plain lines
    make the words theirs: the bot repeating "Cork" does not."""
    quotes: list[tuple[str, set[str], set[str]]] = []
    plain: dict[str, set[str]] = {}  # by speaker: another's echo of a quote makes it no fact
    for line in sources:
        speaker, colon, said = line.partition(":")
        speaker, said = (speaker, said) if colon else ("", line)
        if evidence_problem(said) == "quote":
            who = {m.lower() for m in _REPORTER.findall(said)} - {"i", "we", "you"}
            quotes.append((speaker, set(tokens(said)) - {stem(w) for w in who}, who))
        elif evidence_problem(said) is None:
            plain.setdefault(speaker, set()).update(tokens(said))
    for sentence in sentences(text):
        if _SAYING.search(sentence):
            continue
        words = content_words(sentence)
        have = {w.removesuffix("'s") for w in surface(sentence)}
        for speaker, content, who in quotes:
            if len((words & content) - plain.get(speaker, set())) >= 2 and not who & have:
                return True
    return False
