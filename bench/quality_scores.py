"""The pure scores of `bench.model_quality`: LoCoMo's token F1 and the entity retention of a
summary. No model, no I/O, so the unit tests check them directly.

Token F1 normalises as the LoCoMo authors' evaluation does (lower case, punctuation removed,
"a", "an", "the" and "and" removed, whitespace collapsed) and counts the shared tokens of the
answer and the gold answer. The authors also stem with Porter and split multi-hop answers at
commas; both are left out here (no stemmer is a dependency), so "camping" and "camp" do not
match: these figures are a little lower than theirs would be, for every condition alike.

An entity is a name, place, date or number of the source text, found by rule: a capitalised
word not opening a sentence (runs of them joined: "Lake Tahoe"), a month or weekday name, a
year, and any other number (words and digits). A summary keeps an entity when it contains it
(case-insensitive, whole words).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve", "twenty", "thirty", "hundred", "thousand")
# Capitalised words that are not entities even mid-sentence.
_NOT_NAMES = frozenset({"i", "i'm", "i've", "i'll", "i'd", "oh", "wow", "hey", "yes", "no",
                        "ok", "okay", "thanks", "lol", "omg"})
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+(?:[.,:/]\d+)*")
_SENTENCE_END = re.compile(r"[.!?:]$|^$")


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation: lower case, no punctuation, no articles or "and", single
    spaces."""
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    """The harmonic mean of token precision and recall after `normalize_answer`."""
    pred, want = normalize_answer(prediction).split(), normalize_answer(gold).split()
    shared = sum((Counter(pred) & Counter(want)).values())
    if not pred or not want or shared == 0:
        return 0.0
    precision, recall = shared / len(pred), shared / len(want)
    return 2 * precision * recall / (precision + recall)


def entities(text: str) -> set[str]:
    """The names, places, dates and numbers of `text`, lower-cased (see the module's rules)."""
    found: set[str] = set()
    for line in text.splitlines():
        # "Speaker: text": the speaker's name is an entity, the colon starts a sentence.
        previous = ""
        run: list[str] = []
        for match in _TOKEN.finditer(line):
            word = match.group().strip("'’-")
            low = word.lower()
            opens = bool(_SENTENCE_END.search(line[: match.start()].rstrip()))
            if word[:1].isdigit() or low in MONTHS or low in WEEKDAYS or low in NUMBER_WORDS:
                found.add(low)
            name = (word[:1].isupper() and low not in _NOT_NAMES
                    and (not opens or (previous == "" and line[match.end():].startswith(":"))))
            if name and low not in MONTHS and low not in WEEKDAYS:
                run.append(low)
            else:
                if run:
                    found.add(" ".join(run))
                run = []
            previous = word
        if run:
            found.add(" ".join(run))
    return found


def kept(source_entities: Iterable[str], summary: str) -> set[str]:
    """Which of `source_entities` the summary contains as whole words (case-insensitive)."""
    low = summary.lower()
    return {e for e in source_entities if re.search(rf"(?<!\w){re.escape(e)}(?!\w)", low)}


def retention(source: str, summary: str) -> tuple[int, int]:
    """(entities of `source` kept by `summary`, entities of `source`)."""
    want = entities(source)
    return len(kept(want, summary)), len(want)
