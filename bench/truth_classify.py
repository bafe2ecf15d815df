"""The truthfulness benchmark's judge (`bench.truth`): each stored item is classed by code as
`echo`, `unsupported` or `supported`, with the reason.

An item is split into sentences; the item takes its worst sentence's class.

- **echo**: the sentence shares a run of `ECHO_NGRAM` words (two of them content words) with
  the text the models are shown by Strata itself (every prompt module's strings, the JSON
  schemas' field names, the persona, the tool list) that the person's conversation does not
  contain; or it names a tool. A model copying its instructions into memory.
- **unsupported**: the sentence carries a distinctive word of another person's truth that this
  person never used (one memory reaching another); or a trap's words without the frame that
  makes them true (the hypothetical city stored as home, the corrected year, the brother's
  job, the bot's own wrong answer: `bench.truth_people.Trap`); or a name or number its sources
  lack; or fewer than `MIN_SUPPORT` of its content words are found in its sources; or, for a
  pattern (a habit), fewer than two of the person's messages hold half its content words.
- **supported**: otherwise (a sentence with no content words is supported: it claims nothing).

The sources of a claim about the person (facts, patterns, reflections, portrait sentences) are
the person's own words, their name and their planted truth; of a summary (continuity, episode,
roll-up), the person's conversation, both sides, since a summary tells what was said by
whom; of a discovery, the pages research was served, and the person's words. Words match by a
shared prefix of at least `PREFIX` letters, so "swimming" is found by "swim" and "pharmacy" by
"pharmacist": crude, and the same for every layer and every run. A trap's word is found by its
own forms only when it is shorter than `TRAP_PREFIX` letters ("ski" in "skiing", not in
"skills"); a longer one by prefix ("pharmacist" in "pharmacists").

A summary tells who said what, so in a summary a trap's words are framed when they are told as
the bot's: in a line of an extractive episode labelled with the bot's name ("Strata: ..."), or
after the bot's name and a verb of saying ("Strata mentions that Cork ..."), and only when the
bot's own lines hold every one of them (a summary that puts words in the bot's mouth is not
framed by naming it). Such a sentence tells what the bot said, not what is true of the person.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bench.truth_people import Trap
from strata.memory.rules.fact_words import PROFESSIONS

ECHO_NGRAM = 4
MIN_SUPPORT = 0.5
PREFIX = 4
TRAP_PREFIX = 5
PERSON_LAYERS = ("fact", "pattern", "geo", "reflection", "portrait")
SUMMARY_LAYERS = ("continuity", "episode", "rollup")
LAYERS = (*PERSON_LAYERS, *SUMMARY_LAYERS, "discovery")
CLASSES = ("supported", "unsupported", "echo")

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’_-]*")
_SUFFIXES = frozenset({"s", "es", "ed", "d", "ing", "ning", "er", "ers"})
_POSSESSIVE = re.compile(r"['’]s$")
# Words before a sentence's subject ("My brother Ravi …", "Her cat …").
_OWNERS = frozenset(("my", "her", "his", "their", "our", "the", "a", "an"))
_URL = re.compile(r"https?://\S+")
_RELATED = re.compile(r"\(related tool: [\w-]+\)")
_SENTENCE = re.compile(r"(?<=[.!?;])[\"'”’)]*\s+|\n+")


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOP = _set("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it
its itself just me more most my myself no nor not now of off on once only or other our ours
out over own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself i'm it's don't im ive i've
one two three get got like really well yes ok okay oh hi hey lot lots much many still even
way thing things something someone always never often usually every day week today tonight
""")
# Words about the telling, not the person: they need no support ("Alice mentioned that ...").
META = _set("""
user person people assistant strata bot conversation chat message messages discuss discussed
discussing mention mentioned mentions talk talked talking said says say tell told share
shared shares express expressed state stated note noted seem seems seemed appear appears
asked asks ask question questions seems likely also named called name
""")
# What a summary calls the bot, besides its name, and the verbs that tell what it said.
_BOT = r"(?:the bot|the assistant|{name})"
_SAYS = (r"(?:\s+\w+ly|\s+also)?\s+(?:said|says|say|mention\w*|repl\w*|answer\w*|explain\w*|"
         r"note\w*|suggest\w*|claim\w*|told|tell\w*|add\w*|respond\w*|state\w*|assum\w*|"
         r"guess\w*|insist\w*|point\w* out|believe\w*|think\w*|thought)\b")
_LABEL = re.compile(r"^([^:\n]{1,40}):\s+(?=\S)")
_FORMS = frozenset({"s", "es", "ed", "d", "ing", "er", "ers", "ier", "iers"})
# Frame words of a quote that are verbs of saying (the others name whose words they are).
_SPEECH = ("said", "say", "told", "tell", "quot", "claim", "reckon")


def words(text: str) -> list[str]:
    """Lower-case words, a possessive's "'s" dropped ("Alice's" is "alice")."""
    return [_POSSESSIVE.sub("", w.lower()).strip("'’_-") for w in _WORD.findall(text)]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def content(ws: Iterable[str]) -> list[str]:
    return [w for w in ws if len(w) > 2 and w not in STOP and w not in META]


def _near(word: str, vocab: frozenset[str]) -> bool:
    """`word` in `vocab`, or sharing a prefix of at least PREFIX letters with a word of it."""
    if word in vocab:
        return True
    # A short word and its inflections ("run", "runs", "running").
    if any(word.startswith(v) and word[len(v):] in _SUFFIXES for v in vocab if len(v) >= 3):
        return True
    n = min(len(word), 6)
    if n < PREFIX:
        return False
    stem = word[:n]
    return any(v.startswith(stem) or (len(v) >= PREFIX and word.startswith(v))
               for v in vocab)


def _grams(ws: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)}


@dataclass(frozen=True, slots=True)
class Echoes:
    """What Strata itself shows the models: its prompts' word runs and its tools' names."""

    grams: frozenset[tuple[str, ...]]
    tools: frozenset[str]

    @classmethod
    def of(cls, texts: Iterable[str], tools: Iterable[str]) -> Echoes:
        grams: set[tuple[str, ...]] = set()
        for text in texts:
            for g in _grams(words(text), ECHO_NGRAM):
                if len(content(g)) >= 2:
                    grams.add(g)
        return cls(frozenset(grams), frozenset(t.lower() for t in tools))

    def found(self, text: str, said: frozenset[tuple[str, ...]]) -> str | None:
        ws = words(text)
        for w in ws:
            if w in self.tools and "_" in w:
                return f"names the tool {w}"
        for g in _grams(ws, ECHO_NGRAM):
            if g in self.grams and g not in said:
                return "repeats the prompt: " + " ".join(g)
        return None


@dataclass(frozen=True, slots=True)
class Sources:
    """What one person's items may rest on."""

    own: frozenset[str]  # the person's own words, name and planted truth
    lines: tuple[frozenset[str], ...]  # each of the person's own messages, as words
    dialogue: frozenset[str]  # the whole conversation, both sides
    pages: frozenset[str]  # what research was served
    said_grams: frozenset[tuple[str, ...]]  # the conversation's word runs (not echoes)
    traps: tuple[Trap, ...]
    others: frozenset[str]  # distinctive words of the other people's truth
    bot: frozenset[str] = frozenset()  # the words of the bot's own lines
    bot_name: str = "strata"

    @classmethod
    def of(cls, own_lines: Iterable[str], dialogue_lines: Iterable[str], names: Iterable[str],
           pages: Iterable[str], traps: Sequence[Trap], others: Iterable[str], *,
           bot_lines: Iterable[str] = (), bot_name: str = "Strata") -> Sources:
        lines = tuple(frozenset(words(line)) for line in own_lines)
        own = {w for line in lines for w in line} | {n.lower() for n in names}
        dialogue_words: list[str] = []
        for line in dialogue_lines:
            dialogue_words += [*words(line), "\n"]
        page_words = {w for p in pages for w in words(p)}
        return cls(frozenset(own), lines, frozenset(dialogue_words) | own,
                   frozenset(page_words),
                   frozenset(_grams(dialogue_words, ECHO_NGRAM)), tuple(traps),
                   frozenset(w for w in others if not _near(w, frozenset(own))),
                   frozenset(w for line in bot_lines for w in words(line)), bot_name.lower())

    def bot_said(self) -> re.Pattern[str]:
        """The bot named and a verb of saying: what follows is told as the bot's words."""
        return re.compile(r"\b" + _BOT.format(name=re.escape(self.bot_name)) + _SAYS,
                          re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Verdict:
    cls: str
    reason: str


def _vocab(layer: str, src: Sources) -> frozenset[str]:
    if layer in SUMMARY_LAYERS:
        return src.dialogue
    if layer == "discovery":
        return src.pages | src.own
    return src.own


def _form(word: str, base: str) -> bool:
    """Whether `word` is `base` or one of its forms ("ski": "skis", "skiing", "skier"; not
    "skills"); a base of TRAP_PREFIX letters or more is found by prefix."""
    if word == base or (len(base) >= TRAP_PREFIX and word.startswith(base)):
        return True
    for stem in (base, base[:-1] if base.endswith("e") else None,
                 base + base[-1] if len(base) >= 3 else None):
        if stem and word.startswith(stem) and word[len(stem):] in _FORMS:
            return True
    return False


def _has(ws: Sequence[str], base: str) -> bool:
    return any(_form(w, base) for w in ws)


def _bots(sentence: str, ws: list[str], trap: Trap, src: Sources, speaker: str | None
          ) -> bool:
    """Whether the trap's words are told as the bot's (see the module's docstring)."""
    if not all(_has(src.bot, t) for t in trap.words):
        return False
    if speaker is not None and speaker.lower() == src.bot_name:
        return True
    said = src.bot_said().search(sentence)
    return said is not None and all(_has(words(sentence[said.end():]), t) for t in trap.words)


def _trap(sentence: str, ws: list[str], layer: str, trap: Trap, src: Sources,
          speaker: str | None = None) -> bool:
    """Whether the sentence carries all of the trap's words and none of its frame (a frame
    word starts a word; a frame of several words is found as a phrase). Someone else's words
    are framed by who they are of only when that someone comes first ("Alice's brother
    moved to Cork", not "Alice moved to Cork near her brother"); a verb of saying frames them
    anywhere."""
    if not all(_has(ws, t) for t in trap.words):
        return False
    if trap.why == "lent":  # told of someone else: the sentence's subject is theirs
        subject = [w for w in ws if w not in _OWNERS and not _POSSESSIVE.search(w)][:1]
        return bool(subject) and any(_form(subject[0], f) for f in trap.frame)
    low = " ".join(ws)
    # A summary may tell what a question was about, and what the bot said.
    if layer in SUMMARY_LAYERS and (trap.why == "asked" or _bots(sentence, ws, trap, src,
                                                                 speaker)):
        return False
    first = min(i for i, w in enumerate(ws) if any(_form(w, t) for t in trap.words))

    def framed(f: str) -> bool:
        if " " in f:
            return f in low
        before = trap.why == "quoted" and not f.startswith(_SPEECH)
        return any(w.startswith(f) for w in (ws[:first] if before else ws))

    return not any(framed(f.strip()) for f in trap.frame)


def _sentence(sentence: str, layer: str, src: Sources, echoes: Echoes,
              speaker: str | None = None) -> Verdict:
    echo = echoes.found(sentence, src.said_grams)
    if echo:
        return Verdict("echo", echo)
    ws = words(sentence)
    vocab = _vocab(layer, src)
    leaked = [w for w in content(ws) if w in src.others and not _near(w, vocab)]
    if leaked:
        return Verdict("unsupported", "another person's truth: " + ", ".join(leaked))
    for trap in src.traps:
        if _trap(sentence, ws, layer, trap, src, speaker):
            return Verdict("unsupported", f"{trap.why}: {' '.join(trap.words)}")
    # Names and numbers: capitalised words after the first, and digits.
    raw = _WORD.findall(sentence)
    named = [_POSSESSIVE.sub("", w.lower()) for i, w in enumerate(raw)
             if (w[0].isdigit() or (i > 0 and w[0].isupper()))]
    named = [w for w in named if w not in META and w not in STOP]
    missing = [w for w in named if not _near(w.strip("'’"), vocab)]
    if missing:
        return Verdict("unsupported", "name or number not in its sources: "
                       + ", ".join(missing))
    claim = content(ws)
    # A job is the claim that matters, however few its words ("As an accountant, …").
    jobs = [w for w in claim if w in PROFESSIONS and not _near(w, vocab)]
    if jobs:
        return Verdict("unsupported", "a job not in its sources: " + ", ".join(jobs))
    if not claim:
        return Verdict("supported", "claims nothing")
    found = [w for w in claim if _near(w, vocab)]
    if len(found) / len(claim) < MIN_SUPPORT:
        absent = [w for w in claim if w not in found]
        return Verdict("unsupported", f"{len(found)}/{len(claim)} content words in its "
                       "sources; not: " + ", ".join(absent[:8]))
    if layer == "pattern":
        # A habit is something done again and again: its words in two messages at least.
        again = sum(1 for line in src.lines
                    if sum(_near(w, line) for w in claim) / len(claim) >= MIN_SUPPORT)
        if again < 2:
            return Verdict("unsupported", f"a pattern from {again} message(s): not a habit")
    return Verdict("supported", f"{len(found)}/{len(claim)} content words in its sources")


def classify(text: str, layer: str, src: Sources, echoes: Echoes) -> Verdict:
    """The item's class: its worst sentence's (echo, then unsupported, then supported)."""
    # A discovery's address is its citation, and a pattern's "(related tool: X)" is added by
    # the job's code: neither is the model's claim.
    text = _RELATED.sub(" ", _URL.sub(" ", text))
    verdicts = [_sentence(s, layer, src, echoes, who) for who, s in _told(text, layer)] or [
        Verdict("supported", "empty")]
    return max(verdicts, key=lambda v: CLASSES.index(v.cls))


def _told(text: str, layer: str) -> list[tuple[str | None, str]]:
    """The item's sentences, each with its speaker when a summary's line is labelled with one
    ("Strata: ..." in an extractive episode: every sentence of that line is the bot's)."""
    if layer not in SUMMARY_LAYERS:
        return [(None, s) for s in sentences(text)]
    out: list[tuple[str | None, str]] = []
    for line in text.splitlines():
        label = _LABEL.match(line.strip())
        out += [(label.group(1) if label else None, s) for s in sentences(line)]
    return out


def has_words(text: str, wanted: Sequence[str]) -> bool:
    """Whether every one of `wanted` starts a word of `text` (a planted fact's words)."""
    ws = words(text)
    return all(any(w.startswith(x) for w in ws) for x in wanted)
