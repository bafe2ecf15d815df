"""The sentence forms the model-free fact reader knows (`strata.memory.facts.plain`), one rule
each: a pattern anchored at the start of a clause, and what it reads from a match as
(subject, attribute, fact text). The rules are tried in order; the first that gives facts wins.
Names and places must be capitalised as written. Pure: the standard library only."""

from __future__ import annotations

import re
from collections.abc import Callable

from strata.memory.rules.fact_words import PROFESSIONS

# Pieces of the sentence forms.
_I_AM = r"(?i:i'm|i am|im)"
_I_HAVE = r"(?i:i have|i've got|i have got|i've|i got)"
# A household's pets and people are the person's too ("we have a cat", "our dog Juno").
_WE_HAVE = r"(?i:we have|we've got|we have got|we've|we got)"
_NAME = r"[A-Z][\w'-]+"
_PLACE = r"[A-Z][\w'-]+(?: [A-Z][\w'-]+){0,2}"
_REST = r"[^,.;!?]{2,80}"
_RELATIONS = (r"(?i:mother|mum|mom|father|dad|sister|brother|wife|husband|partner|son|"
              r"daughter|girlfriend|boyfriend|fiancee?|aunt|uncle|cousin|grandmother|"
              r"grandfather|grandma|grandpa|granny|niece|nephew|best friend|flatmate|"
              r"roommate|stepmother|stepfather|stepson|stepdaughter|"
              r"dog|cat|puppy|kitten|parrot|rabbit|hamster|horse|tortoise|budgie)")
_CONDITIONS = (r"(?:type [12] )?(?i:diabetes|asthma|epilepsy|coeliac disease|celiac disease|"
               r"migraines|arthritis|eczema|adhd|autism|dyslexia|tinnitus|psoriasis)")
_TRAITS = (r"(?i:lactose intolerant|gluten intolerant|colou?r-?blind|left-handed|"
           r"right-handed|diabetic|deaf|dyslexic|autistic|vegetarian|vegan|pescatarian|"
           r"married|divorced|single|engaged|widowed|retired)")
_DIETS = {"vegetarian", "vegan", "pescatarian"}
_MARITAL = {"married", "divorced", "single", "engaged", "widowed"}
# Verbs whose plain present tense states a lasting habit on its own ("I collect vinyl");
# other verbs need a frequency ("I run every morning").
_LASTING_VERBS = frozenset((
    "work", "teach", "speak", "collect", "keep", "own", "volunteer", "study", "support",
    "practise", "practice", "coach", "raise", "breed", "knit", "paint", "bake", "brew",
    "train", "attend", "sing", "write",
))
_FREQUENCY = re.compile(
    r"\b(every|each|usually|always|often|daily|weekly|regularly|on (mon|tues|wednes|thurs|"
    r"fri|satur|sun)days|\w+ times a (day|week|month)|most (days|mornings|evenings))\b",
    re.IGNORECASE,
)
_NOT_VERBS = frozenset((
    "am", "was", "were", "will", "would", "could", "can", "should", "might", "must", "did",
    "do", "don't", "have", "had", "just", "really", "also", "still", "think", "feel", "guess",
    "need", "want", "hope", "wish", "love", "like", "hate", "mean", "know", "see", "said",
    "told",
))

_PRONOUN = re.compile(r"\s*(him|her|them|it|us|you|that|this)\b", re.IGNORECASE)

Found = list[tuple[str, str, str]]  # (subject, attribute, text)


def _own(text: str) -> str:
    """First-person words of a captured phrase in the third person ("my garden" -> "their")."""
    swaps = {"my": "their", "mine": "theirs", "me": "them", "myself": "themselves"}
    return " ".join(swaps.get(w.lower(), w) for w in text.split())


def _third(verb: str) -> str:
    low = verb.lower()
    if low in ("have", "go", "do"):
        return {"have": "has", "go": "goes", "do": "does"}[low]
    if re.search(r"(s|sh|ch|x|z|o)$", low):
        return low + "es"
    if re.search(r"[^aeiou]y$", low):
        return low[:-1] + "ies"
    return low + "s"


def _names(text: str) -> list[str]:
    """The capitalised names of a list such as "Miso and Tofu" or "Noor, Sami and Lea"."""
    parts = re.split(r",\s*|\s+and\s+", text.strip())
    return [p for p in parts if re.fullmatch(_NAME, p)]


Read = Callable[[re.Match[str]], Found]
Rule = tuple[re.Pattern[str], Read]
# The sentence forms in the order they are tried; the first that gives facts wins.
RULES: list[Rule] = []


def _rule(pattern: str) -> Callable[[Read], Read]:
    def add(fn: Read) -> Read:
        RULES.append((re.compile("^" + pattern), fn))
        return fn
    return add


@_rule(rf"{_I_AM} allergic to (?P<x>{_REST})")
def _allergy(m: re.Match[str]) -> Found:
    return [("self", "", f"Is allergic to {_own(m['x'].strip())}")]

@_rule(rf"{_I_HAVE} (?:a |an )?(?:bad |severe |mild |slight )?(?P<x>[a-z]+) allergy\b")
def _allergy_noun(m: re.Match[str]) -> Found:
    return [("self", "", f"Is allergic to {m['x']}")]

@_rule(rf"{_I_HAVE} (?P<x>{_CONDITIONS})\b")
def _condition(m: re.Match[str]) -> Found:
    return [("self", "", f"Has {m['x']}")]

# The trait must end the clause or be followed by what does not qualify it ("I'm a
# vegetarian except for fish" is not "is vegetarian").
@_rule(rf"(?:{_I_AM}|(?i:i've been|i have been)) (?:a |an )?(?P<x>{_TRAITS})"
      r"(?=$|,|\s(?i:and|since|for|to|now|too)\b)")
def _trait(m: re.Match[str]) -> Found:
    word = m["x"].lower()
    attribute = "diet" if word in _DIETS else "marital_status" if word in _MARITAL else ""
    if word == "retired":
        return []  # "I'm retired" alone is fine, but "a retired firefighter" is a job
    return [("self", attribute, f"Is {word}")]

@_rule(rf"{_I_AM} (?P<x>(?:a|an) (?:retired |former )?(?P<job>[a-z]+)\b(?:{_REST})?)")
def _job(m: re.Match[str]) -> Found:
    if m["job"].lower() not in PROFESSIONS:
        return []
    return [("self", "job", f"Is {_own(m['x'].strip())}")]

@_rule(rf"(?i:i work as) (?P<x>(?:a|an) {_REST})")
def _work_as(m: re.Match[str]) -> Found:
    return [("self", "job", f"Works as {_own(m['x'].strip())}")]

@_rule(rf"{_I_AM} (?:a |an )?(?:big |huge )?fan of (?P<x>{_REST})")
def _fan(m: re.Match[str]) -> Found:
    return [("self", "", f"Is a fan of {_own(m['x'].strip())}")]

@_rule(rf"(?i:i (?:live|am living|'m living|moved|have moved|'ve moved|relocated|am based"
      rf"|'m based)) (?:in|to) (?P<x>{_PLACE})\b")
def _home(m: re.Match[str]) -> Found:
    return [("self", "home_city", f"Lives in {m['x']}")]

@_rule(rf"(?i:home is) (?P<x>{_PLACE})\b")
def _home_is(m: re.Match[str]) -> Found:
    return [("self", "home_city", f"Lives in {m['x']}")]

@_rule(rf"(?i:i live with) [^,.;!?]{{2,40}}? in (?P<x>{_PLACE})\b")
def _home_with(m: re.Match[str]) -> Found:
    return [("self", "home_city", f"Lives in {m['x']}")]

@_rule(rf"(?:{_I_AM} (?i:originally )?(?i:from)|(?i:i grew up in)) (?P<x>{_PLACE})\b")
def _origin(m: re.Match[str]) -> Found:
    return [("self", "hometown", f"Is from {m['x']}")]

@_rule(rf"(?i:(?:i was )?born in) (?P<x>\d{{4}}|{_PLACE})\b")
def _born(m: re.Match[str]) -> Found:
    attribute = "birth_year" if m["x"].isdigit() else "birthplace"
    return [("self", attribute, f"Was born in {m['x']}")]

@_rule(rf"{_I_AM} (?P<x>\d{{1,3}}) (?i:years old|yo)\b")
def _age(m: re.Match[str]) -> Found:
    return [("self", "age", f"Is {m['x']} years old")]

@_rule(rf"(?i:my birthday is) (?:on )?(?P<x>{_REST})")
def _birthday(m: re.Match[str]) -> Found:
    return [("self", "birthday", f"Birthday is on {m['x'].strip()}")]

@_rule(rf"(?i:my favou?rite) (?P<what>[a-z]+(?: [a-z]+)?) is (?P<x>{_REST})")
def _favourite(m: re.Match[str]) -> Found:
    what = m["what"].lower()
    return [("self", "favourite_" + what.replace(" ", "_"),
             f"Favourite {what} is {_own(m['x'].strip())}")]

@_rule(r"(?i:i speak) (?P<x>[A-Z]\w+(?:(?:, | and )[A-Z]\w+)*)")
def _speaks(m: re.Match[str]) -> Found:
    return [("self", "", f"Speaks {m['x']}")]

@_rule(rf"(?i:my|our) (?P<rel>{_RELATIONS})(?:'s name is| is called| is named| (?P<n2>{_NAME}))"
      rf"(?: (?P<n>{_NAME}))?(?P<rest>{_REST})?")
def _relation(m: re.Match[str]) -> Found:
    rel, name = m["rel"].lower(), m["n2"] or m["n"]
    if not name:
        return []
    out = [(rel, "name", f"Has a {rel} named {name}")]
    rest = (m["rest"] or "").strip()
    place = re.match(rf"(?:(?:lives|is living) in|(?:has )?moved to) ({_PLACE})\b", rest)
    if m["n2"] and place:
        out.append((f"{rel} {name}", "home_city", f"{rel.capitalize()} {name} lives in "
                                                  f"{place.group(1)}"))
    return out

@_rule(rf"(?i:my) (?P<rel>{_RELATIONS}) is (?P<x>(?:a|an) (?:retired |former )?"
      rf"(?P<job>[a-z]+)\b(?:{_REST})?)")
def _relation_job(m: re.Match[str]) -> Found:
    if m["job"].lower() not in PROFESSIONS:
        return []
    rel = m["rel"].lower()
    return [(rel, "job", f"{rel.capitalize()} is {_own(m['x'].strip())}")]

@_rule(rf"(?:{_I_HAVE}|{_WE_HAVE}|(?i:i adopted|we adopted)) (?i:a|an) (?P<what>(?:[a-z]+ )?[a-z]+)"
      rf",? (?i:called|named) (?P<n>{_NAME})")
def _named(m: re.Match[str]) -> Found:
    what = m["what"].lower()
    return [(what.split()[-1], "name", f"Has a {what} named {m['n']}")]

@_rule(rf"{_I_HAVE} (?i:two|three|four|\d) (?P<what>[a-z]+?)s?,? (?:(?i:called|named) )?"
      rf"(?P<n>{_NAME}(?:, {_NAME})*,? and {_NAME})")
def _several(m: re.Match[str]) -> Found:
    what = {"children": "child", "childre": "child"}.get(
        m["what"].lower(), m["what"].lower())
    return [(f"{what} {n}", "name", f"Has a {what} named {n}") for n in _names(m["n"])]

@_rule(r"(?i:i (?:don't|do not|never)) (?P<v>eat|drink) (?P<x>[^.;!?]{2,80})")
def _diet_not(m: re.Match[str]) -> Found:
    return [("self", "", f"Does not {m['v'].lower()} {_own(m['x'].strip())}")]

@_rule(rf"(?i:i can't stand|i cannot stand|i hate|i love|i adore|i enjoy) (?P<x>{_REST})")
def _taste(m: re.Match[str]) -> Found:
    x = m["x"].strip()
    if _PRONOUN.match(x) or x.lower().startswith("to "):
        return []
    verb = m.group(0)[: m.start("x") - m.start(0)].strip().lower()
    says = {"i love": "Loves", "i adore": "Loves", "i enjoy": "Enjoys", "i hate": "Hates"}
    return [("self", "", f"{says.get(verb, 'Cannot stand')} {_own(x)}")]

@_rule(rf"(?i:i play) (?P<x>(?:the )?{_REST})")
def _plays(m: re.Match[str]) -> Found:
    return [("self", "", f"Plays {_own(m['x'].strip())}")]

@_rule(rf"{_I_AM} (?P<v>studying|learning|training for) (?P<x>{_REST})")
def _learning(m: re.Match[str]) -> Found:
    return [("self", "", f"Is {m['v'].lower()} {_own(m['x'].strip())}")]

@_rule(rf"(?i:i(?:'ve| have) been) (?P<v>[a-z]+ing) (?P<x>{_REST}"
      rf"(?: for \w+ (?:years|months)| since \d{{4}}))")
def _been(m: re.Match[str]) -> Found:
    return [("self", "", f"Has been {m['v']} {_own(m['x'].strip())}")]

@_rule(rf"(?i:i studied) (?P<x>{_REST})")
def _studied(m: re.Match[str]) -> Found:
    return [("self", "education", f"Studied {_own(m['x'].strip())}")]

@_rule(rf"(?i:i (?:drive|own)) (?P<x>(?i:a|an) {_REST})")
def _owns(m: re.Match[str]) -> Found:
    verb = m.group(0).split()[1].lower()
    return [("self", "", f"{_third(verb).capitalize()} {_own(m['x'].strip())}")]

@_rule(rf"(?i:i) (?:(?P<adv>usually|always|often|regularly) )?(?P<v>[a-z]+) (?P<x>{_REST})")
def _habit(m: re.Match[str]) -> Found:
    verb = m["v"].lower()
    if (verb in _NOT_VERBS or verb.endswith(("ed", "ing")) or _PRONOUN.match(m["x"])
            or (verb != "go" and re.match(r"\w+ing\b", m["x"]))):  # "I keep forgetting…"
        return []
    if verb not in _LASTING_VERBS and not _FREQUENCY.search(m.group(0)):
        return []
    adv = f"{m['adv'].lower()} " if m["adv"] else ""
    text = f"{adv}{_third(verb)} {_own(m['x'].strip())}"
    return [("self", "", text[0].upper() + text[1:])]

# Tried last, after the habit form ("I work night shifts at the warehouse").
# "I just finished work, long shift at the bakery": a shift somewhere is work there. Only the
# person's own shift: a shift of someone they name ("my sister's shift") is not theirs.
@_rule(rf"(?i:i)\b(?P<pre>[^.;!?]{{0,40}}?)\b(?i:shifts?) at (?P<x>(?i:the) [a-z]+|{_PLACE})\b")
def _shift(m: re.Match[str]) -> Found:
    if re.search(r"\b(?:my|our|his|her|their|\w+'s)\b", m["pre"], re.IGNORECASE):
        return []
    place = m["x"]
    if place.lower().startswith("the "):
        place = "the " + place[4:]
    return [("self", "workplace", f"Works at {place}")]
