"""A reply to a person's question about themselves, told to them, not as them.

Asked "What is my job?", the embedded 0.5B model answers from the person's own line in the
prompt, but often in that line's voice: "I am a nurse at the city hospital", "Ana: I'm a
pharmacist, mostly night shifts…" (`bench.model_history`, the quick start by hand). Read back,
the bot claims the person's life as its own. Prompting did not fix it at that size (a note
before the message made first-person replies more frequent, 5 of 8 against 2 of 8), so code
does: when the message asks about the person themselves, a reply sentence in the first person
whose content words are the person's own (`OWN_SHARE` of them in what the person said in
the prompt) is turned to the second person ("You are a nurse at the city hospital"), and
the copied speaker label is taken off. A sentence where the bot speaks of itself (its name,
"assistant", "help"), or already addresses the person, is left as it is.

Pure: the standard library and `strata.memory.rules.text`'s stemmer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strata.core.voice import opens_in_first_person, told_as
from strata.memory.rules.text import stem, tokens

# A content word of the sentence must be the person's in at least this share.
OWN_SHARE = 0.75

_QUESTION = re.compile(r"\?\s*$|^\s*(?:what|where|when|who|which|how|why|do|does|did|am|is|"
                       r"are|was|were|have|has|can|could|tell me)\b", re.I)
# "who are you?": the 0.5B answers with the person's line as its own ("I work as a nurse at
# the city hospital", `bench.model_history`, identity), so such a reply gets a voice too.
_ASKS_BOT = re.compile(r"\b(?:who|what)\s+are\s+you\b|\bwhat(?:['’]s|\s+is)\s+your\s+name\b|"
                       r"\b(?:about|introduce)\s+yourself\b", re.I)
_FIRST = re.compile(r"\b(?:my|me|mine|i|i'm|i’m|myself)\b", re.I)
_BOT_SELF = re.compile(r"\b(?:strata|assistant|bot|ai|companion|language model|help|assist|"
                       r"remember|note|noted)\b", re.I)
_YOU = re.compile(r"\b(?:you|your|yours|yourself)\b", re.I)
# Words that say when or how much, not what: "As of now, I am a pharmacist".
_FILLER = frozenset(stem(w) for w in ("am", "now", "currently", "still", "also", "really",
                                      "actually", "mostly", "just", "always"))


def _content(text: str) -> list[str]:
    return [w for w in tokens(text) if w not in _FILLER and not w.isdigit()]


@dataclass(frozen=True, slots=True)
class Voice:
    """The person's words the prompt carried (their lines, recalled or in the history) and
    their name, for a turn whose message asks about themselves."""

    own: frozenset[str]  # stems of the person's words, the question's included
    name: str

    def fix(self, sentence: str) -> str:
        """`sentence` told to the person when it restates their own words as the bot's."""
        body = sentence.strip()
        label = re.match(rf"^(?:{re.escape(self.name)}|user|person)\s*:\s*", body, re.I)
        if label:
            body = body[label.end():]
        if not opens_in_first_person(body) or _BOT_SELF.search(body) or _YOU.search(body):
            return sentence if label is None else _keep_space(sentence, body)
        words = _content(body)
        if not words or sum(w in self.own for w in words) < OWN_SHARE * len(words):
            return sentence if label is None else _keep_space(sentence, body)
        return _keep_space(sentence, told_as(body, "you"))


def _keep_space(sentence: str, body: str) -> str:
    """`body` with the spaces and line breaks around `sentence`."""
    lead = sentence[:len(sentence) - len(sentence.lstrip())]
    return lead + body + sentence[len(sentence.rstrip()):]


def asks_about_bot(asked: str) -> bool:
    """Whether `asked` asks who or what the bot is ("who are you?", "what's your name?")."""
    return bool(_ASKS_BOT.search(asked))


def voice_for(asked: str, own_words: str, name: str) -> Voice | None:
    """A `Voice` when `asked` is a question about the person themselves ("What is my job?",
    "where do I live") or about the bot ("who are you?"), else None: other replies are left
    as the model wrote them."""
    about_them = bool(_QUESTION.search(asked) and _FIRST.search(asked))
    if not (about_them or asks_about_bot(asked)) or not own_words.strip():
        return None
    return Voice(frozenset(_content(f"{own_words}\n{asked}")), name or "user")
