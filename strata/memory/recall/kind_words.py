"""The kinds of thing a question asks for by kind and a person says by name: "Which instrument
is Lena learning?" of "I've been practising the harp". Data for recall's bridges
(`strata.memory.recall.bridge`): per kind, the question words that ask for one, the words
that state one on their own, and the words that state one only beside a cue ("organ" is an
instrument beside "play" or "lessons", not in "organic").

Closed lists, never a guess. A word is left out (or kept only beside a cue) when its stem is
also an everyday word's: Porter's stemmer makes "engineer" and "engine" one stem, "recorder"
and "record", "boxing" and "box". `tests/unit/test_recall_bridge.py` checks everyday words
against every list. Words are written out as people write them; the bridge stems them.
"""

from __future__ import annotations

from dataclasses import dataclass

from strata.memory.recall.place_words import CITIES, COUNTRIES
from strata.memory.rules.fact_words import PROFESSIONS


@dataclass(frozen=True, slots=True)
class Cued:
    """Words that state a thing of a kind only in a row that also holds one of `cues`."""

    words: str
    cues: str


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of thing: the question words asking for one (`asks`), the words stating one on
    their own (`alone`), and those stating one beside a cue (`cued`). Space-separated words."""

    name: str
    asks: str
    alone: str = ""
    cued: tuple[Cued, ...] = ()


# Professions whose stem is also another everyday word's, so they would answer "job" for
# anyone who cooks or has a garden: the verbs ("cooked", "nursing", "coached" stem to "cook",
# "nurs", "coach") and the agent nouns the stemmer cuts back to their root ("gardener" and
# "garden", "designer" and "design", "engineer" and "engine"). Left out, except the few whose
# everyday twin is rare in chat ("engine", "translate"): those state a job only beside a word
# that says so outright ("a position as a translator", "hired as an engineer"). Even that cue
# has a twin ("positive" stems as "position" does), so "research" beside it is no job.
AMBIGUOUS_PROFESSIONS = frozenset((
    "cook", "coach", "judge", "nurse", "pilot", "tailor", "vet",
    "accountant", "consultant", "designer", "developer", "engineer", "gardener", "lecturer",
    "mechanic", "photographer", "programmer", "researcher", "translator",
))
_RARE_TWIN = "engineer translator lecturer mechanic"


# A job said outright ("my new job", "hired", "a position as"), and what says one beside a
# profession ("I work as a pharmacist", "I started as a carpenter").
_JOB_WORDS = "job occupation profession career employed"
# A job said outright already states one: only these add anything beside an ambiguous profession.
_JOB_STRICT = "hired position promoted apprenticeship"
_JOB_CUES = "work works worked working started starting position hired"

_PLAY = ("play plays playing played practise practising practised practice practicing "
         "lesson lessons learn learning learnt learned")

KINDS: tuple[Kind, ...] = (
    Kind("job", asks="job jobs occupation profession career employer",
         alone=_JOB_WORDS,
         cued=(Cued(" ".join(sorted(PROFESSIONS - AMBIGUOUS_PROFESSIONS)), _JOB_CUES),
               Cued(_RARE_TWIN, _JOB_STRICT))),
    Kind("instrument", asks="instrument instruments",
         alone=("piano guitar violin viola cello harp flute clarinet oboe bassoon saxophone "
                "sax trumpet trombone tuba accordion ukulele banjo mandolin harmonica "
                "xylophone harpsichord sitar bagpipes piccolo cornet marimba tambourine "
                "bongos djembe lute zither theremin didgeridoo glockenspiel euphonium "
                "cymbals timpani kalimba ocarina"),
         cued=(Cued("drum drums keyboard organ bass horn triangle fiddle synthesizer", _PLAY),)),
    Kind("dog", asks="dog dogs doggy",
         alone=("puppy puppies pup beagle labrador retriever poodle terrier spaniel collie "
                "dachshund pug chihuahua bulldog greyhound whippet schnauzer rottweiler "
                "doberman dalmatian mastiff sheepdog labradoodle cockapoo pomeranian samoyed "
                "akita weimaraner basset bloodhound pitbull mutt")),
    Kind("cat", asks="cat cats", alone="kitten kittens kitty tabby"),
    Kind("pet", asks="pet pets animal animals",
         alone=("dog dogs puppy puppies pup cat cats kitten kittens kitty hamster gerbil "
                "rabbit bunny parrot budgie cockatiel goldfish tortoise turtle gecko iguana "
                "ferret chinchilla hedgehog lizard axolotl beagle labrador retriever poodle "
                "terrier spaniel collie dachshund pug chihuahua")),
    Kind("sport", asks="sport sports",
         alone=("football soccer basketball baseball tennis golf rugby cricket hockey "
                "volleyball badminton handball netball softball lacrosse archery gymnastics "
                "judo karate taekwondo kickboxing skiing snowboarding skateboarding "
                "bouldering swimming cycling jogging marathon triathlon sailing kayaking "
                "canoeing snooker billiards yoga pilates weightlifting powerlifting crossfit "
                "athletics parkour frisbee dodgeball"),
         cued=(Cued("boxing fencing bowling rowing squash darts surfing climbing",
                    # Not "training" ("train"), nor "match" ("matching").
                    "play plays playing played team club league tournament lesson lessons"),)),
    Kind("language", asks="language languages",
         alone="esperanto",
         cued=(Cued("english spanish french german italian portuguese dutch swedish norwegian "
                    "danish finnish polish russian ukrainian greek turkish arabic hebrew "
                    "persian farsi hindi urdu bengali punjabi tamil mandarin cantonese "
                    "chinese japanese korean vietnamese thai indonesian malay tagalog swahili "
                    "latin czech hungarian romanian catalan basque welsh gaelic icelandic",
                    "speak speaks speaking spoke fluent fluently learn learning learnt "
                    # Not "course" ("of course"), nor "practice" ("practically").
                    "learned lesson lessons class duolingo practise practising grammar "
                    "vocabulary"),)),
    Kind("car", asks="car cars vehicle",
         alone=("toyota honda bmw audi volkswagen tesla mercedes volvo subaru mazda nissan "
                "hyundai kia jeep porsche ferrari lamborghini fiat peugeot renault skoda "
                "prius hatchback convertible minivan suv")),
    Kind("city", asks="city cities town towns", alone=CITIES),
    Kind("country", asks="country countries", alone=COUNTRIES),
)
