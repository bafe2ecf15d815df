"""A second recall data set, generated: multi-session chats with planted facts, distractors and
questions, in the LoCoMo JSONL format that `strata eval recall` reads (turns and questions).

LoCoMo's chats were written by a model asked to tell two lives; these are a different kind on
purpose: everyday sessions between two friends, mostly small talk, into which facts are
planted one turn each ("we adopted a beagle, we call him Biscuit"). Each fact has a distractor
of the same kind said by the other friend ("my sister's terrier, Pixel, ..."), and some facts
change later (a new job, a move), so the question asks for the newest. Questions use other
words than the turns where they can (a beagle is asked about as a dog), and ask:

- `single_hop`: one planted fact (its turn is the evidence);
- `temporal`: when something happened (the turn's session date is the answer);
- `multi_hop`: every value of a kind one friend mentioned over several sessions (the trips);
- `update`: the newest value of a fact that changed (evidence: the turn that changed it);
- `absent`: something of a kind the chat never mentions for that friend (no evidence; what
  recall injects for it is noise).

Deterministic: the same `--seed` gives the same files. Nothing here comes from LoCoMo.

    python -m strata.evaluation.synth --out DIR [--conversations 6 --seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

FIRST_NAMES = ["Priya", "Tomasz", "Ines", "Kwame", "Sofia", "Haruto", "Lena", "Mateo", "Aisha",
               "Jonas", "Yara", "Felix", "Noor", "Elias", "Mira", "Diego"]
SMALL_TALK = [
    "Morning! How's your week going?", "Pretty busy, but fine. Yours?",
    "The weather has been awful, rain all day.", "Same here, I barely left the house.",
    "Did you sleep well? You looked tired yesterday.", "Not really, the neighbours were loud.",
    "I'm making coffee, want me to save you a cup?", "Haha, I wish, I'm already on my third.",
    "Work is dragging today.", "Hang in there, it's almost the weekend.",
    "Did you watch the match last night?", "Only the second half, what a finish.",
    "I need a holiday.", "Don't we all.", "Anyway, how are you feeling?",
    "Better than last week, thanks for asking.", "Traffic was a nightmare this morning.",
    "I took the bus, it was packed.", "Lunch plans?", "Leftovers again, nothing exciting.",
    "Ugh, my phone keeps dying.", "Time for a new battery maybe.",
    "I cleaned the whole flat today.", "Impressive, mine is a disaster.",
    "Have you heard from the others?", "Not for a while, everyone is busy.",
]
# Composed small talk, so that filler rarely repeats word for word: "{when} I {did}, {felt}."
WHEN = ["Yesterday", "This morning", "Last night", "On Sunday", "After work", "Earlier"]
DID = ["went for a long walk", "fixed the kitchen tap", "cooked a big pot of soup",
       "watched two episodes of that crime show", "tidied the balcony", "called my aunt",
       "went grocery shopping", "ironed a mountain of shirts", "played cards with the neighbours",
       "sorted out my taxes", "repainted the hallway", "baked some bread"]
FELT = ["it was nice", "what a waste of time", "I'm exhausted now", "not bad at all",
        "I needed that", "never again", "pretty relaxing actually"]
REACTIONS = ["Oh nice!", "No way, really?", "That's great to hear.", "Wow, tell me more.",
             "Haha, love that.", "Sounds lovely.", "Good for you!", "Oh, I didn't know that."]


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of fact: how it is said (`{v}` the value) and how it is asked about (`{p}` the
    person), with the values it may take."""

    name: str
    said: tuple[str, ...]
    asked: str
    values: tuple[str, ...]
    distractor: str  # the other friend mentions a value of the same kind ({v})


KINDS = [
    Kind("pet", ("We finally adopted a beagle puppy, we call him {v}.",
                 "Meet the newest family member: a little beagle named {v}."),
         "What is the name of {p}'s dog?", ("Biscuit", "Pretzel", "Waffles", "Nacho", "Bruno"),
         "My sister's cat is called {v}, she is a menace."),
    Kind("job", ("I got the offer! I'm starting as a {v} next month.",
                 "Big news, I accepted a position as a {v}."),
         "What job did {p} take?", ("pharmacist", "surveyor", "sound engineer", "librarian",
                                    "welder", "translator"),
         "My cousin just quit being a {v}, can you believe it."),
    Kind("instrument", ("I signed up for {v} lessons, my fingers hurt already.",
                        "I've been practising the {v} every evening."),
         "Which musical instrument is {p} learning?", ("cello", "banjo", "harp", "trumpet",
                                                       "accordion"),
         "The neighbour's kid plays the {v} at 7am, send help."),
    Kind("home", ("We moved! The new flat is in {v}, right by the river.",
                  "Moving day is done, we live in {v} now."),
         "Which neighbourhood does {p} live in now?", ("Harbourside", "Old Mill", "Greenhill",
                                                       "Brickfield", "Larchmont"),
         "My old colleague bought a house in {v}, super expensive."),
    Kind("allergy", ("Turns out I'm allergic to {v}, the doctor confirmed it.",
                     "So the rash was from {v}, I'm allergic, who knew."),
         "What is {p} allergic to?", ("kiwi", "shellfish", "peanuts", "sesame", "latex"),
         "My flatmate can't eat {v}, cooking for her is tricky."),
    Kind("book", ("I'm reading '{v}' at the moment, can't put it down.",
                  "Just started '{v}', the first chapter is wild."),
         "Which novel has {p} been reading?", ("The Salt Road", "Glass Orchard", "Night Ferry",
                                               "The Quiet Engine", "Paper Lanterns"),
         "My book club picked '{v}' and I hated it."),
]
# Trips: several per person over the chat, for the multi-hop and temporal questions.
CITIES = ("Lisbon", "Krakow", "Nairobi", "Osaka", "Montreal", "Valparaiso", "Tbilisi",
          "Reykjavik")
TRIP = ("Just got back from {v}, the food was incredible.",
        "Back home after a long weekend in {v}.")


@dataclass
class Chat:
    """One generated conversation as it is being written."""

    conv: str
    people: tuple[str, str]
    start: datetime
    turns: list[dict[str, Any]] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)
    session: int = 0
    index: int = 0
    when: datetime = datetime(2024, 1, 1, tzinfo=UTC)

    def new_session(self, rng: random.Random) -> None:
        self.session += 1
        self.index = 0
        self.when = (self.start if self.session == 1
                     else self.when + timedelta(days=rng.randint(3, 12), hours=rng.randint(1, 8)))

    def say(self, who: int, text: str) -> str:
        self.index += 1
        turn_id = f"{self.conv}:D{self.session}:{self.index}"
        ts = self.when + timedelta(seconds=30 * self.index)
        self.turns.append({"conv": self.conv, "session": self.session, "turn_id": turn_id,
                           "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ"), "speaker": self.people[who],
                           "role": "user" if who == 0 else "assistant", "text": text})
        return turn_id

    def ask(self, question: str, category: str, evidence: Sequence[str],
            answer: str | None) -> None:
        self.questions.append({"conv": self.conv, "qid": f"{self.conv}:q{len(self.questions)}",
                               "question": question, "category": category,
                               "evidence": list(evidence), "answer": answer})


def _chatter(chat: Chat, rng: random.Random, lines: int) -> None:
    for _ in range(lines):
        line = (rng.choice(SMALL_TALK) if rng.random() < 0.5 else
                f"{rng.choice(WHEN)} I {rng.choice(DID)}, {rng.choice(FELT)}.")
        chat.say(chat.index % 2, line)


# Facts said so far, per plan index: [(value, turn id)], the newest last.
Planted = dict[int, list[tuple[str, str]]]
# Trips per friend (0, 1): [(city, turn id, when)].
Trips = dict[int, list[tuple[str, str, datetime]]]


def conversation(n: int, rng: random.Random) -> Chat:
    """One chat of 16-22 sessions between two friends, facts planted in some of them."""
    a, b = rng.sample(FIRST_NAMES, 2)
    chat = Chat(f"synth-{n}", (a, b), datetime(2024, 1, 8, 18, tzinfo=UTC)
                + timedelta(days=rng.randint(0, 200)))
    sessions = rng.randint(16, 22)
    kinds = rng.sample(KINDS, 4)
    # Each (kind, person) planted once; two of them change later (the newest is asked for).
    plan: list[tuple[Kind, int]] = [(k, rng.randint(0, 1)) for k in kinds]
    changes = set(rng.sample(range(len(plan)), 2))
    schedule = _schedule(len(plan), changes, sessions, rng)
    planted, trips = _sessions(chat, rng, sessions, plan, schedule)
    _questions(chat, rng, plan, planted, trips, [k for k in KINDS if k not in kinds])
    return chat


def _schedule(facts: int, changes: set[int], sessions: int,
              rng: random.Random) -> dict[int, list[int]]:
    """When each fact is said (session -> plan indexes): a session of the first two thirds,
    and for a fact that changes a later one as well."""
    schedule: dict[int, list[int]] = {}
    for j in range(facts):
        first = rng.randint(1, sessions * 2 // 3)
        schedule.setdefault(first, []).append(j)
        if j in changes:
            schedule.setdefault(rng.randint(first + 1, sessions), []).append(j)
    return schedule


def _sessions(chat: Chat, rng: random.Random, sessions: int, plan: list[tuple[Kind, int]],
              schedule: dict[int, list[int]]) -> tuple[Planted, Trips]:
    """Write the sessions: small talk around the facts each one plants (with their
    distractors) and four trips; return what was planted where."""
    planted: Planted = {}
    trips: Trips = {0: [], 1: []}
    trip_sessions = set(rng.sample(range(1, sessions + 1), 4))
    cities = list(rng.sample(CITIES, 5))
    for s in range(1, sessions + 1):
        chat.new_session(rng)
        _chatter(chat, rng, rng.randint(5, 10))
        for j in schedule.get(s, []):
            kind, who = plan[j]
            taken = {v for v, _ in planted.get(j, [])}
            value = rng.choice([v for v in kind.values if v not in taken])
            tid = chat.say(who, rng.choice(kind.said).format(v=value))
            planted.setdefault(j, []).append((value, tid))
            chat.say(1 - who, rng.choice(REACTIONS))
            # The distractor: the other friend, the same kind, another value, nearby.
            other = rng.choice([v for v in kind.values if v not in taken | {value}])
            chat.say(1 - who, kind.distractor.format(v=other))
            chat.say(who, rng.choice(REACTIONS))
        if s in trip_sessions:
            who = rng.randint(0, 1)
            city = cities.pop()
            tid = chat.say(who, rng.choice(TRIP).format(v=city))
            trips[who].append((city, tid, chat.when))
            chat.say(1 - who, rng.choice(REACTIONS))
        _chatter(chat, rng, rng.randint(5, 10))
    return planted, trips


def _questions(chat: Chat, rng: random.Random, plan: list[tuple[Kind, int]], planted: Planted,
               trips: Trips, absent: list[Kind]) -> None:
    """Ask about each planted fact (its newest value), each trip, and two absent kinds."""
    for j, (kind, who) in enumerate(plan):
        value, tid = planted[j][-1]
        person = chat.people[who]
        chat.ask(kind.asked.format(p=person), "update" if len(planted[j]) > 1 else "single_hop",
                 [tid], value)
    for who, visits in trips.items():
        person = chat.people[who]
        for city, tid, when in visits:
            chat.ask(f"When did {person} travel to {city}?", "temporal", [tid],
                     when.strftime("%d %B %Y"))
        if len(visits) > 1:
            chat.ask(f"Which cities has {person} been to?", "multi_hop",
                     [t for _, t, _ in visits], ", ".join(c for c, _, _ in visits))
    for kind in absent[:2]:
        chat.ask(kind.asked.format(p=chat.people[rng.randint(0, 1)]), "absent", [], None)


def generate(conversations: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """All turns and questions, in order; questions asked a day after their chat ends."""
    rng = random.Random(seed)
    turns: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for n in range(conversations):
        chat = conversation(n, rng)
        asked = (chat.when + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        turns += chat.turns
        questions += [dict(q, asked_at=asked) for q in chat.questions]
    return turns, questions


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for turns.jsonl and questions.jsonl")
    ap.add_argument("--conversations", type=int, default=6)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    turns, questions = generate(args.conversations, args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("turns.jsonl", turns), ("questions.jsonl", questions)):
        (out / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(turns)} turns, {len(questions)} questions in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
