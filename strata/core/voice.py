"""A text's first person told in the second or third person: "I am a nurse" -> "You are a
nurse" (a reply to the person, `strata.bot.reply_voice`), "They are a nurse" (a portrait or a
fact about them). A small model writes what it read in the person's lines in their voice.
A leaf module."""

from __future__ import annotations

import re

# "I am…", "My job…", and after a short opening: "As of now, I…", "As an accountant, I…".
_OPENS_FIRST = re.compile(r"^(?:(?:as (?:of|a|an|the) [^,]{1,30}|so|well|yes|sure|right|ok|"
                          r"okay)[,:]?\s+)?(?:i\b|i'm\b|i’m\b|i've\b|my\b)", re.I)
_SWAPS = {
    "you": {"i am": "you are", "i'm": "you're", "i’m": "you’re", "i was": "you were",
            "i've": "you've", "i’ve": "you’ve", "i'd": "you'd", "i’d": "you’d",
            "i'll": "you'll", "i’ll": "you’ll", "i": "you", "my": "your", "me": "you",
            "mine": "yours", "myself": "yourself"},
    "they": {"i am": "they are", "i'm": "they're", "i’m": "they’re", "i was": "they were",
             "i've": "they've", "i’ve": "they’ve", "i'd": "they'd", "i’d": "they’d",
             "i'll": "they'll", "i’ll": "they’ll", "i": "they", "my": "their", "me": "them",
             "mine": "theirs", "myself": "themselves"},
}
_SWAP = re.compile(r"\b(?:i am|i was|i['’](?:m|ve|d|ll)|i|my|me|mine|myself)\b", re.I)


def told_as(text: str, person: str) -> str:
    """`text`'s first person turned to `person` ("you" or "they"): "I am a nurse" -> "You are
    a nurse", "They are a nurse"."""
    swaps = _SWAPS[person]
    told = _SWAP.sub(lambda m: swaps[m.group(0).lower()], text)
    return told[:1].upper() + told[1:]


def opens_in_first_person(text: str) -> bool:
    """Whether `text` opens as its speaker's own ("I am…", "My job…", "As of now, I…")."""
    return bool(_OPENS_FIRST.match(text.strip()))
