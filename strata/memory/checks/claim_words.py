"""How the grounding checks read a claim: its sentences, its words as written, and its content
words (stems; framing, numbers and calendar words left out). Split from
`strata.memory.checks.grounding`, which `strata.memory.checks.frames` shares them with.
"""

from __future__ import annotations

import functools
import re

from strata.core.words import SURFACE_WORD
from strata.memory.rules.names import calendar_stems
from strata.memory.rules.text import stem, tokens

# A speaker's label ("Eve: …", a dangling "Strata:", a quoted "> eve: …") opening a line
# or following a sentence's end: the form excerpts and extractive summaries are written in.
# In a finding it is the transcript copied; in a summary it says whose the next words are.
SPEAKER_LABEL = re.compile(r"(?m)(?:^|[.!?]\s+)[\s>]*([^\W\d_][\w'-]{0,30})\s*:(?=\s|$)")

# Words that frame a claim rather than carry it ("the person usually mentions ...").
_FRAMING_WORDS = """person user people someone usual usually often regularly frequently
    typically tend tends habit habits habitually routine routines pattern patterns repeatedly
    always sometimes mention mentions mentioned say says said talk talks talked tell tells told
    write writes wrote message messages seem seems appear appears likely also like likes really
    very much many each every time times"""


@functools.cache
def _framing() -> frozenset[str]:
    """The framing words' stems, made on first use (importing must not load the stemmer)."""
    return frozenset(stem(w) for w in _FRAMING_WORDS.split())

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“])")


def surface(text: str) -> list[str]:
    """`text`'s words as written, lower-cased, one apostrophe."""
    return [w.lower().replace("’", "'") for w in SURFACE_WORD.findall(text)]


def content_words(text: str) -> set[str]:
    """The stems that carry `text`'s meaning: not framing, numbers or calendar words."""
    calendar = calendar_stems()
    return {t for t in tokens(text)
            if t not in _framing() and not t.isdigit() and t not in calendar}


def sentences(text: str) -> list[str]:
    """`text` split into sentences (a portrait is checked one sentence at a time)."""
    return [s.strip() for s in _SENTENCE.split(" ".join(text.split())) if s.strip()]
