"""Grounding: the one rule every model-written memory passes before it is stored. Pure: no
storage, no model; the writers (compaction, episode summaries, roll-up parents, fact extraction
and the cognition jobs) call it with the item and what the item cites, and store the item only
when it passes. A refusal names its layer and reason; the writers count refusals per person
(`strata.memory.store.refusals`), and `log_refusal` logs the refused text at DEBUG.

Four checks, one per kind of memory, and one echo test shared by all:

- `check_claim`: a claim about the person (a fact, a habit, a place) must be found in the
  person's OWN words it cites: every name, number and date of the claim, and at least half of
  its other content words (stems). The bot's lines are never evidence; callers pass only the
  person's lines.
- `check_traced`: a portrait or reflection sentence must trace to the stored facts or episodes
  it is built from, by a stricter share (`TRACED_SHARE`, three quarters of its content words).
- `check_summary`: a summary (continuity, episode, roll-up parent) must not carry a name,
  number or date its sources lack, nor a quotation nobody said, must be about its sources
  (a quarter of its content words), and where speakers are known, must not give one speaker's
  words to another (`frames.misattributed`, a cheap test: see its docstring for what it misses),
  nor tell a number in another frame or unit than its sources ("every 2 minutes" of "in 2
  minutes": `number_frames`).
- `check_discovery`: a research note must not carry a name, number or date its search
  result lacks, and must be about it.
- `echo`: text copied from the prompt, its examples or schema (a run of four words of the
  prompt the sources lack), a placeholder, a tool or field name, or JSON where prose belongs.

The measures are lexical: a paraphrase with none of the person's words ("enjoys the
outdoors" for "I love hiking") is refused. That is the intended side to err on: a missing
memory is asked again, an invented one is trusted.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from strata.memory.checks.claim_words import SPEAKER_LABEL, content_words, sentences, surface
from strata.memory.checks.frames import misattributed, unframed, unquoted
from strata.memory.checks.number_frames import reframed
from strata.memory.checks.subjects import borrowed, lent, only_filler
from strata.memory.rules.fact_words import PROFESSIONS
from strata.memory.rules.names import calendar_stems, names_in
from strata.memory.rules.text import GROUNDED_SHARE, is_markup, stem, tokens

log = logging.getLogger(__name__)

# The layers a refusal is counted under (`strata jobs status`).
FACTS = "facts"
PATTERNS = "patterns"
PLACES = "places"
REFLECTIONS = "reflections"
PORTRAIT = "portrait"
DISCOVERIES = "discoveries"
CONTINUITY = "continuity"
EPISODES = "episodes"
ROLLUP = "rollup"
LAYERS = (FACTS, PATTERNS, PLACES, REFLECTIONS, PORTRAIT, DISCOVERIES, CONTINUITY, EPISODES,
          ROLLUP)

# The reasons (a closed set, so counts add up across runs).
EMPTY = "empty"
ECHO = "echo of the prompt"
MARKUP = "markup"
UNCITED = "cites nothing it was given"
NAME = "name not in its sources"
NUMBER = "number not in its sources"
DATE = "date not in its sources"
QUOTE = "quote nobody said"
NOT_SAID = "not in the person's words"
UNTRACED = "not traced to facts or episodes"
OFF_TOPIC = "not about its sources"
MISATTRIBUTED = "attributed to the wrong speaker"
NOT_ON_PAGE = "not on the fetched page"
UNFRAMED = "a question, hypothetical or quote told as fact"
REFRAMED = "a number told in another frame"

# A claim keeps at least this share of its content words from its evidence.
CLAIM_SHARE = 0.5
# A portrait or reflection sentence, from facts already in the person's words: more of it must
# trace ("a sister named Greta who also works in Cork, so they love her" traced 3 words of 5).
TRACED_SHARE = 0.75
_DIGITS = re.compile(r"\d+")
_QUOTED = re.compile(r"[\"“”]([^\"“”]{8,})[\"“”]")
_SNAKE = re.compile(r"\b[a-z]+_[a-z_]+\b")
# Placeholders and instructions a model copies from a prompt into its answer.
_PLACEHOLDER = re.compile(
    r"short statement|statement about|the person's (?:exact |own )?words|exact words|"
    r"name or null|one short sentence|your (?:answer|summary|finding)|here goes|lorem ipsum|"
    r"\bplaceholder\b|<[^<>]{1,40}>|\bjson\b|\bschema\b|\.\.\.|…",
    re.IGNORECASE,
)
ECHO_RUN = 4  # words in a row copied from the prompt


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an item a model proposed was not stored."""

    layer: str
    reason: str
    text: str


def log_refusal(refusal: Refusal, owner_id: int | None = None) -> None:
    """The refused text at DEBUG, so a wrong check can be seen and fixed."""
    log.debug("grounding refused (%s, owner %s, %s): %r", refusal.layer, owner_id,
              refusal.reason, refusal.text[:400])


def echo(text: str, prompt: Iterable[str] = (), sources: Sequence[str] = ()) -> str | None:
    """Why `text` echoes its prompt (ECHO, MARKUP), or None. `prompt` is what the model was
    shown besides its sources: instructions, examples, the tool and field names."""
    if is_markup(text):
        return MARKUP
    said = "\n".join(sources).lower()
    if _PLACEHOLDER.search(text) and not _PLACEHOLDER.search(said):
        return ECHO
    if any(ident not in said for ident in _SNAKE.findall(text)):
        return ECHO  # a tool or field name: code, not a memory about a person
    words = surface(text)
    runs = {" ".join(words[i:i + ECHO_RUN]) for i in range(len(words) - ECHO_RUN + 1)}
    if not runs:
        return None
    source_text = " " + " ".join(surface(said)) + " "
    for part in prompt:
        shown = " " + " ".join(surface(part)) + " "
        for run in runs:
            if f" {run} " in shown and f" {run} " not in source_text:
                return ECHO
    return None


def _missing_specifics(text: str, sources: str, known: Collection[str] = ()) -> str | None:
    """NAME, NUMBER or DATE when `text` carries one its sources lack (`known`: names that need
    no source, the person's own and the bot's), and NOT_SAID for a profession they lack ("As
    an accountant, …" of a pharmacist: one word of five, yet the claim that matters)."""
    have = set(surface(sources)) | {w for name in known for w in surface(name)}
    have |= {w.removesuffix("'s") for w in have}
    stems = set(tokens(sources))
    digits = set(_DIGITS.findall(sources))
    if any(d not in digits for d in _DIGITS.findall(text)):
        return NUMBER
    if any(w in PROFESSIONS and stem(w) not in stems for w in surface(text.lower())):
        return NOT_SAID
    calendar = calendar_stems()
    if any(stem(w) in calendar and stem(w) not in stems for w in surface(text)):
        return DATE
    if any(n not in have and stem(n) not in stems for n in names_in(text)
           if stem(n) not in calendar):
        return NAME
    return None



def content_share(text: str, source: str, names: Collection[str] = ()) -> float:
    """The part of `text`'s content words (stems; not framing, numbers, calendar words or
    `names`) that `source` holds: 0..1."""
    return _share(text, source, {t for name in names for t in tokens(name)})


def _share(text: str, sources: str, known: Collection[str] = ()) -> float:
    words = content_words(text) - set(known)
    if not words:
        return 0.0
    return len(words & set(tokens(sources))) / len(words)


def _supported(text: str, sources: Sequence[str], prompt: Iterable[str], share: float,
               short: str, known: Collection[str] = ()) -> str | None:
    if not text.strip() or not surface(text):
        return EMPTY
    if not sources or not any(s.strip() for s in sources):
        return UNCITED
    why = echo(text, prompt, sources)
    if why:
        return why
    joined = "\n".join(sources)
    why = _missing_specifics(text, joined, known)
    if why:
        return why
    known_words = {t for name in known for t in tokens(name)}
    return short if _share(text, joined, known_words) < share else None


def check_claim(text: str, own_words: Sequence[str], *, layer: str,
                prompt: Iterable[str] = (), names: Collection[str] = ()) -> Refusal | None:
    """A claim about the person, against the person's own lines it cites (never the bot's).
    `names`: the person's own name(s), which the claim may use without their saying it."""
    why = EMPTY if only_filler(text) else _supported(text, own_words, prompt, CLAIM_SHARE,
                                                     NOT_SAID, names)
    return Refusal(layer, why, text) if why else None


def check_traced(text: str, facts_or_episodes: Sequence[str], *, layer: str,
                 prompt: Iterable[str] = (), names: Collection[str] = ()) -> Refusal | None:
    """A portrait or reflection sentence, against the stored facts and episodes it rests on.
    A transcript line (a speaker's label) is an echo of the excerpt, not a finding."""
    if only_filler(text):
        why: str | None = EMPTY
    elif SPEAKER_LABEL.search(text):
        why = ECHO
    else:
        why = _supported(text, facts_or_episodes, prompt, TRACED_SHARE, UNTRACED, names)
    if why is None and (borrowed(text, facts_or_episodes, names)
                        or lent(text, facts_or_episodes, names)):
        # "lives in Tartu" of "Brother Ravi lives in Tartu", and "my brother Ravi is allergic
        # to kiwi" of the person's own allergy (`subjects`)
        why = MISATTRIBUTED
    return Refusal(layer, why, text) if why else None


def check_discovery(note: str, page: Sequence[str], *, layer: str = DISCOVERIES,
                    prompt: Iterable[str] = ()) -> Refusal | None:
    """A research note, against the fetched result it keeps (title, snippet)."""
    why = _supported(note, page, prompt, GROUNDED_SHARE, NOT_ON_PAGE)
    return Refusal(layer, why, note) if why else None


def check_summary(text: str, sources: Sequence[str], *, layer: str, prompt: Iterable[str] = (),
                  speakers: Mapping[str, Sequence[str]] | None = None,
                  names: Collection[str] = (), share: float = GROUNDED_SHARE) -> Refusal | None:
    """A summary against what it summarises. `speakers` (name → that speaker's lines) turns on
    the misattribution test; speakers' names count as known. `share`: the part of its content
    words its sources must hold (a quarter by default, room for a long text's paraphrase)."""
    known = [*names, *(speakers or {})]
    why = _supported(text, sources, prompt, share, OFF_TOPIC, known)
    if why is None:
        why = _invented_quote(text, sources)
    if why is None and reframed(text, sources) is not None:
        why = REFRAMED  # "every 2 minutes" of "in 2 minutes" (`number_frames`)
    if why is None and speakers:
        why = ((MISATTRIBUTED if misattributed(text, speakers) else None)
               or (UNFRAMED if unframed(text, sources) or unquoted(text, sources) else None)
               or thin_sentence(text, sources, share, known))
    return Refusal(layer, why, text) if why else None


def _invented_quote(text: str, sources: Sequence[str]) -> str | None:
    """QUOTE when the summary quotes words (three or more) that no source holds."""
    said = " " + " ".join(surface("\n".join(sources))) + " "
    for quoted in _QUOTED.findall(text):
        words = surface(quoted)
        if len(words) >= 3 and f" {' '.join(words)} " not in said:
            return QUOTE
    return None


def by_speaker(lines: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """(speaker, text) lines grouped by speaker, for `check_summary`'s `speakers`."""
    out: dict[str, list[str]] = {}
    for speaker, text in lines:
        out.setdefault(speaker, []).append(text)
    return out


def thin_sentence(text: str, sources: Sequence[str], share: float,
                  known: Collection[str] = ()) -> str | None:
    """OFF_TOPIC when one sentence keeps under `share` of its content words from the sources,
    though the whole summary keeps enough ("Oskar and Strata chat about their daily tasks"
    beside sentences that quote him)."""
    joined = "\n".join(sources)
    known_words = {t for name in known for t in tokens(name)}
    for sentence in sentences(text):
        if content_words(sentence) - known_words and _share(sentence, joined, known_words) < share:
            return OFF_TOPIC
    return None
