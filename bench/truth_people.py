"""The people of the truthfulness benchmark (`bench.truth`): generated, with planted truth.

Each person has a kind of talk and a script of sessions over simulated weeks, drawn from
templates with several phrasings by a seed. What is true of them is planted (`Planted`: a
fact or a habit, with the words a stored fact must hold to count as recalling it, and the
question that should bring its line back through recall). What is *not* true of them, though
their words carry it, is planted as a trap (`Trap`): the city of a hypothetical move, the
value a correction took back, what someone they quoted said of themselves, what a question
asked about, the bot's own wrong answer. A stored claim about the person that carries a trap,
outside the frame that makes it true ("if", "asked", "her brother"), is unsupported.

The kinds of talk: `plain` (states facts and a habit, corrects a year in the next breath,
quotes a boss and a mother), `quiet` (says almost nothing), `asker` (only asks questions),
`hypothetical` (talks of a move and a life they might have, and of a brother's move), and
`ordinary` (the issue's first run: three ordinary messages, then every job). Five people, not
one per kind of talk: on this machine the model's jobs cost two to three minutes per person
and week, and the run must fit in twenty minutes. The issue's runs are cases of the same data:
(a) `ordinary`; (b) several people in one memory (`plain`, `quiet`, `asker`, `hypothetical`)
whose truths must not cross; (c) `plain` asks "What is my job?" after stating it and after
the bot once answered it wrongly (`WrongReply`).

    python -m bench.truth_people [--seed 11] [--weeks 2]     # print the scripts
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field

# A session's item: a line the person says (a real turn), or the bot's wrong answer stored as
# if the model had said it (so the case does not depend on the model erring by chance).


@dataclass(frozen=True, slots=True)
class WrongReply:
    """A question the person asks and a wrong answer the bot gave, stored as that turn."""

    question: str
    answer: str


@dataclass(frozen=True, slots=True)
class Ask:
    """A question the person asks in a real turn; the reply should contain `expect`."""

    question: str
    expect: tuple[str, ...]


Item = str | WrongReply | Ask


@dataclass(frozen=True, slots=True)
class Planted:
    """One true thing about the person: `words` (all of them, as word prefixes) in a stored
    fact recall it; `question` is what turn-zero recall is asked to find its `line`."""

    key: str
    words: tuple[str, ...]
    line: str
    question: str
    habit: bool = False


@dataclass(frozen=True, slots=True)
class Trap:
    """Words in the person's talk that are not true of them: a claim about the person that
    carries all of `words` in one sentence, without a word of `frame`, is unsupported. A `lent`
    trap is the other way round: the person's own truth told of someone else, a sentence
    whose subject is a word of `frame` ("My brother Ravi is allergic to kiwi")."""

    words: tuple[str, ...]
    why: str  # hypothetical | corrected | quoted | asked | bot | lent
    frame: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Person:
    key: str
    name: str
    talk: str
    weeks: tuple[tuple[tuple[Item, ...], ...], ...]  # weeks → sessions → items
    planted: tuple[Planted, ...] = ()
    traps: tuple[Trap, ...] = ()
    cases: tuple[str, ...] = field(default=())  # the runs this person is part of


# Frames that make a trap's words true: a hypothetical, a question, someone else, a correction.
IF_FRAME = ("if", "would", "imagine", "suppose", "hypothetical", "consider", "might", "dream",
            "wonder", "maybe", "thinking")
ASK_FRAME = ("ask", "question", "wonder", "curious", "want to know", "inquir")
QUOTE_FRAME = ("boss", "brother", "mum", "mother", "colleague", "friend", "said", "says",
               "told", "quot")
FIX_FRAME = ("actually", "correct", "meant", "i mean", "mistake", "typo", "not ", "instead",
             "wrong")

SMALL = ["Morning!", "Long day today.", "The weather is grey again.", "Just got home.",
         "Coffee first, then everything else.", "Quiet evening here.",
         "Had leftovers for lunch.", "Busy week so far."]
QUIET = ["hi", "ok", "hm", "fine", "k", "sure", "no", "yes", "bye", "maybe", "ok thanks", "lol"]
QUESTIONS = [
    ("How long should I boil an egg for a runny yolk?", ("egg",)),
    ("What is the capital of Peru?", ("peru",)),
    ("Is it going to rain in Berlin tomorrow?", ("berlin",)),
    ("Do cats like music, do you think?", ("cat",)),
    ("Can you explain how a heat pump works?", ("heat", "pump")),
    ("What's a good name for a goldfish?", ("goldfish",)),
    ("How many bones does a shark have?", ("shark",)),
    ("Is sourdough healthier than normal bread?", ("sourdough",)),
]
JOBS = ["pharmacist", "surveyor", "librarian", "welder", "translator", "dentist"]
CITIES = ["Porto", "Gdansk", "Tampere", "Ghent", "Bologna", "Cork", "Tartu"]
SIBLINGS = [("sister", "Nadia"), ("brother", "Tomas"), ("sister", "Greta"), ("brother", "Ravi")]
ALLERGIES = ["peanuts", "shellfish", "sesame", "kiwi"]
PETS = [("dog", "Pepper"), ("cat", "Mochi"), ("dog", "Juno"), ("cat", "Ziggy")]
HABITS = [("swim", "I swim before work every {d}.", "I went swimming again this {d} morning.",
           "Do I have a regular routine?"),
          ("cello", "I practise the cello every {d} evening.",
           "Cello practice again tonight, it's {d}.", "Which instrument do I play?"),
          ("run", "I go running by the canal every {d}.", "Did my {d} run by the canal again.",
           "Do I have a regular routine?")]
DAYS = ["Tuesday", "Wednesday", "Thursday", "Saturday"]


def _pick(rng: random.Random, options: list[str], *fmt: str) -> str:
    return rng.choice(options).format(*fmt)


def plain(rng: random.Random, weeks: int) -> Person:
    """States a job (a pharmacist: the issue's case c), a sibling's city, an allergy, a pet
    and a weekly habit; corrects a year in the next breath; quotes a boss and a mother; asks
    "What is my job?" after the bot once got it wrong."""
    rel, sib = rng.choice(SIBLINGS)
    city, allergy = rng.choice(CITIES), rng.choice(ALLERGIES)
    pet, pet_name = rng.choice(PETS)
    hkey, hsay, hagain, hq = rng.choice(HABITS)
    day = rng.choice(DAYS)
    wrong, right = rng.sample(["1978", "1987", "1983", "1991"], 2)
    job_line = _pick(rng, ["I work as a pharmacist at the hospital.",
                           "I'm a pharmacist, mostly night shifts at the hospital."])
    sib_line = _pick(rng, ["My {0} {1} lives in {2}.", "My {0} {1} moved to {2} last year."],
                     rel, sib, city)
    allergy_line = _pick(rng, ["I'm allergic to {0}.", "I have a {0} allergy, a bad one."],
                         allergy)
    pet_line = _pick(rng, ["We have a {0} called {1}.", "Our {0} {1} chewed my shoe again."],
                     pet, pet_name)
    year_line = _pick(rng, ["I was born in {0}. No wait, typo: {1}.",
                            "Born in {0}, I mean {1}, sorry, long day."], wrong, right)
    habit_line = hsay.format(d=day)
    quotes = ("My boss keeps saying 'I'm allergic to Mondays', every single week.",
              "Mum always says 'you should have been a dentist like me'.")
    first: tuple[tuple[Item, ...], ...] = (
        (rng.choice(SMALL), job_line, sib_line, quotes[0]),
             (allergy_line, pet_line, habit_line, year_line))
    case_c: tuple[Item, ...] = (hagain.format(d=day), quotes[1],
              WrongReply("What is my job?",
                         "My job is to help people as a software engineer at a bank."),
              Ask("What is my job?", ("pharmacist",)))
    # Quick (one week): everything in it; else the question comes in the second week.
    later = tuple(((hagain.format(d=day), rng.choice(SMALL)),) for _ in range(weeks - 2))
    script: tuple[tuple[tuple[Item, ...], ...], ...] = (
        ((*first, case_c),) if weeks < 2 else (first, (case_c,), *later))
    planted = (
        Planted("job", ("pharmacist",), job_line, "What is my job?"),
        Planted("sibling", (sib.lower(), city.lower()), sib_line,
                f"Where does my {rel} live?"),
        Planted("allergy", ("allerg", allergy[:5].lower()), allergy_line,
                "What am I allergic to?"),
        Planted("pet", (pet_name.lower(),), pet_line, f"What is my {pet}'s name?"),
        Planted("born", (right,), year_line, "When was I born?"),
        Planted("habit", (hkey,), habit_line, hq, habit=True),
    )
    traps = (Trap(("software",), "bot"), Trap(("bank",), "bot"),
             Trap(("help", "people"), "bot"),
             Trap((wrong,), "corrected", FIX_FRAME),
             Trap(("monday",), "quoted", QUOTE_FRAME),
             Trap(("dentist",), "quoted", QUOTE_FRAME),
             # The sibling's city is the sibling's, not the person's.
             Trap(("live", city.lower()), "quoted", (sib.lower(), rel)),
             # And the person's allergy and pet are not the sibling's.
             Trap(("allerg", allergy[:5].lower()), "lent", (sib.lower(), rel)),
             Trap((pet_name.lower(),), "lent", (sib.lower(), rel)))
    return Person("plain", "Alice", "plain", script, planted, traps, ("b", "c"))


def quiet(rng: random.Random, weeks: int) -> Person:
    """Says almost nothing: anything stored about them beyond their name is invented."""
    return Person("quiet", "Oskar", "quiet",
                  tuple((tuple(rng.sample(QUIET, 3)),) for _ in range(weeks)), cases=("b",))


def asker(rng: random.Random, weeks: int) -> Person:
    """Only asks questions: what they ask about is not who they are."""
    qs = rng.sample(QUESTIONS, 3 * weeks)
    traps = tuple(Trap(words, "asked", ASK_FRAME) for _, words in qs)
    return Person("asker", "Wren", "asker",
                  tuple((tuple(q for q, _ in qs[3 * w:3 * w + 3]),) for w in range(weeks)),
                  traps=traps, cases=("b",))


def hypothetical(rng: random.Random, weeks: int) -> Person:
    """Lives in one city, talks of moving to another and of another life, and of what his
    brother did."""
    home, dream, brother = rng.sample(CITIES, 3)
    job = rng.choice(["baker", "pilot", "beekeeper"])
    home_line = _pick(rng, ["I live in {0}, near the old harbour.",
                            "Home is {0} for me, I've been here ten years."], home)
    lines = (home_line,
             _pick(rng, ["If I moved to Oslo I'd finally learn to ski.",
                         "Imagine I moved to Oslo, I'd ski every weekend."]),
             _pick(rng, ["Sometimes I dream about quitting and becoming a {0}.",
                         "Suppose I became a {0}, would that be crazy?"], job),
             f"My brother told me he just moved to {brother} for a chef job.",
             f"Would a greyhound be happy in a flat in {dream}, if I ever lived there?")
    script = ((lines,),) if weeks < 2 else ((lines[:3],), (lines[3:],))
    return Person("hypothetical", "Dag", "hypothetical", script,
                  (Planted("home", (home.lower(),), home_line, "Where do I live?"),),
                  (Trap(("oslo",), "hypothetical", IF_FRAME),
                   Trap(("ski",), "hypothetical", IF_FRAME),
                   Trap((job,), "hypothetical", IF_FRAME),
                   Trap(("greyhound",), "hypothetical", IF_FRAME),
                   Trap((dream.lower(),), "hypothetical", IF_FRAME),
                   Trap((brother.lower(),), "quoted", QUOTE_FRAME),
                   Trap(("chef",), "quoted", QUOTE_FRAME)),
                  ("b",))


def ordinary(rng: random.Random, weeks: int) -> Person:
    """The issue's first run: three ordinary messages, then every job, forced."""
    return Person("ordinary", "Eve", "ordinary",
                  ((("Hi there!", "I just finished work, long shift at the bakery.",
                     "Going to make some tea and watch a film."),),),
                  (Planted("work", ("bakery",), "I just finished work, long shift at the "
                           "bakery.", "Where do I work?"),),
                  cases=("a",))


TALKS = {f.__name__: f for f in (ordinary, plain, quiet, asker, hypothetical)}


QUICK = ("ordinary", "plain")  # `bench.truth --quick`: the cases a and c


def people(seed: int, weeks: int, only: tuple[str, ...] = ()) -> list[Person]:
    """Everyone (or the talks in `only`), in a fixed order, drawn from `seed`, with scripts of
    `weeks` weeks (each week one session per person)."""
    rng = random.Random(seed)
    cast = [make(rng, weeks) for make in TALKS.values()]
    return [p for p in cast if not only or p.talk in only]


def items(person: Person) -> list[Item]:
    return [i for week in person.weeks for session in week for i in session]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--weeks", type=int, default=2)
    args = ap.parse_args(argv)
    for p in people(args.seed, args.weeks):
        print(f"== {p.name} ({p.talk}; cases {', '.join(p.cases) or '-'})")
        for w, week in enumerate(p.weeks, 1):
            for s, session in enumerate(week, 1):
                for item in session:
                    print(f"  w{w} s{s}: {item}")
        for f in p.planted:
            print(f"  planted {f.key}: {f.words}")
        for t in p.traps:
            print(f"  trap ({t.why}): {t.words}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
