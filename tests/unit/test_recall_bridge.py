"""The kind bridges (`strata.memory.recall.bridge`, `strata.memory.recall.kind_words`) and
the hints' pure parts (`strata.memory.recall.hint`)."""

from __future__ import annotations

import numpy as np
import pytest

from strata.memory.recall.bridge import (
    BRIDGES,
    Whose,
    bridged_coverage,
    bridged_stems,
    bridges_for,
    whose,
)
from strata.memory.recall.gate import gate_idf
from strata.memory.recall.hint import (
    GateWords,
    clean_hints,
    gate_words,
    hinted_stems,
    mean_vector,
    own_coverage,
)
from strata.memory.recall.kind_words import KINDS
from strata.memory.recall.profiles import speaker_of
from strata.memory.recall.rank import RankTuning
from strata.memory.rules.text import query_stems, tokens
from tests.unit.test_recall_rank import table_of


@pytest.mark.parametrize(("question", "kind"), [
    ("What is my job?", "job"), ("What's her occupation?", "job"),
    ("Who is his employer?", "job"), ("Tell me about my career", "job"),
    ("Which musical instrument is Lena learning?", "instrument"),
    ("What is the name of Yara's dog?", "dog"), ("What pets does Melanie have?", "pet"),
    ("What sports does John like?", "sport"), ("Which language is Tim learning?", "language"),
    ("What car does she drive?", "car"), ("What's my cat called?", "cat"),
    ("Which cities has Ines been to?", "city"), ("What town did I move to?", "city"),
    ("What European countries has Maria been to?", "country"),
])
def test_a_question_naming_a_kind_gets_its_bridge(question: str, kind: str) -> None:
    bridges = bridges_for(query_stems(question))
    assert {b.kind for b in bridges.values()} == {kind}, question


@pytest.mark.parametrize("question", [
    "Where did I go hiking?", "Where do I live?", "What do I do for a living?",
    "What harp did Lena buy?",  # names a thing, asks for no kind
])
def test_a_question_asking_for_no_kind_gets_no_bridge(question: str) -> None:
    assert bridges_for(query_stems(question)) == {}, question


def test_each_question_word_asks_for_one_kind_and_every_word_has_a_stem() -> None:
    asks = [s for b in BRIDGES for s in b.asks]
    assert len(asks) == len(set(asks))
    for kind in KINDS:
        for words in (kind.asks, kind.alone, *(c.words for c in kind.cued),
                      *(c.cues for c in kind.cued)):
            assert all(tokens(w) for w in words.split()), (kind.name, words)


def _stated(texts: list[str]) -> dict[str, list[str]]:
    """{kind: the texts that state a thing of that kind}."""
    table = table_of(texts)
    return {b.kind: [t for i, t in enumerate(texts) if b.stated_in(table, i)]
            for b in BRIDGES}


def test_a_thing_said_by_name_states_its_kind() -> None:
    said = {
        "job": ["I work as a pharmacist", "I got the offer! I'm starting as a welder",
                "Big news, I accepted a position as a sound engineer.",
                "They hired me as a translator", "I quit my job today"],
        "instrument": ["I've been practising the harp every evening.",
                       "I signed up for accordion lessons", "I play the organ at church"],
        "dog": ["We finally adopted a beagle puppy, we call him Waffles."],
        "pet": ["Our hamster escaped again", "We finally adopted a beagle puppy"],
        "sport": ["Tennis on Saturday?", "We played squash after work"],
        "language": ["I'm learning Spanish on Duolingo", "She speaks fluent Japanese"],
        "car": ["Finally sold the old Toyota"],
        "city": ["Back from Lisbon, what a trip", "We spent a week in New York"],
        "country": ["Our trip to Spain was lovely", "She grew up in Vietnam"],
    }
    stated = _stated([t for texts in said.values() for t in texts])
    for kind, texts in said.items():
        assert set(texts) <= set(stated[kind]), kind


def test_an_everyday_word_states_no_kind() -> None:
    """Words whose stem a thing's name shares, and things named beside no cue: cooking or
    having a garden is no job, organic food is no organ, French toast is no language."""
    everyday = [
        "Cooked soup for the nurse next door, she loved it",
        "Turns out I'm allergic to kiwi, the doctor confirmed it",  # a doctor, not a job
        "Work is dragging today", "I worked in the garden all afternoon",
        "Coached the kids, judged the bake-off, piloted the new app, tailored my suit",
        "Started fixing the engine, designed a poster, developed the photos",
        "Did some research, consulted my account, the lecture was mechanical",
        "I recorded a podcast and organised a box of organic vegetables",
        "Boxed up the books, bowled over by the news, fenced the yard",
        "We ate French toast with Greek yogurt at the Thai place",
        "The car horn broke and the bass in the stereo rattles",
        "Climbing the stairs, rowing with my brother, squashed a bug",
        "I played cards with the neighbours and learned a new recipe",
        # "positive" stems as "position" does; "train" as "training"; "of course".
        "I'm researching policies to create positive change, an instructor said so",
        "Climbed onto the train after bowling", "Of course, French fries with everything",
        "Started a report on animal shelters, then peach cobbler at work",
        # Places that are also everyday words or first names.
        "A nice split of the bill, reading by the window, my mobile died",
        "Sofia, Sydney and Jordan came over for turkey and chile",
    ]
    assert all(not texts for texts in _stated(everyday).values()), _stated(everyday)


def test_bridged_stems_keep_the_questions_first_and_are_deterministic() -> None:
    stems = query_stems("What is my job?")
    bridges = bridges_for(stems)
    out = bridged_stems(stems, bridges)
    assert out[: len(stems)] == stems
    assert out == bridged_stems(stems, bridges)
    assert len(out) == len(set(out))


def test_hints_are_cleaned_and_add_only_new_stems() -> None:
    assert clean_hints(["  I work as a nurse. ", "", "   ", "x" * 500]) == (
        "I work as a nurse.", "x" * 200)
    stems = query_stems("What is my job?")
    assert hinted_stems(stems, ["My job: I work as a nurse"]) == [*stems, "work", "nurs"]


def test_the_gate_reads_the_questions_own_words_unless_told() -> None:
    asked = ["job"]
    assert gate_words(asked, (), {}, hint_coverage=False) is None  # nothing widened
    words = gate_words(asked, ("I work as a nurse",), {}, hint_coverage=False)
    assert words is not None and words.stems == ("job",)
    assert gate_words(asked, ("I work as a nurse",), {}, hint_coverage=True) is None
    bridged = gate_words(asked, (), bridges_for(asked), hint_coverage=True)
    assert bridged is not None and bridged.stems == ("job",) and "job" in bridged.bridges


def test_the_mean_vector_counts_each_text_once() -> None:
    a = np.array([1.0, 0.0], dtype=np.float32)
    b = np.array([0.0, 1.0], dtype=np.float32)
    m = mean_vector([a, b])
    assert np.allclose(m, [2 ** -0.5, 2 ** -0.5]) and m.dtype == np.float32
    assert np.allclose(mean_vector([a, a]), a)


WHOSE_ROWS = ["Sofia: I've been practising the cello every evening.",
              "Ines: That sounds lovely, I have been busy at work.",
              "Ines: Went for a long walk by the river today."]


def _instrument_found(question: str, owner: Whose | None) -> float:
    table = table_of(WHOSE_ROWS)
    stems = query_stems(question)
    bridges = bridges_for(stems)
    weights = {s: 1.0 for s in stems if s in bridges}  # the kind's word alone
    return bridged_coverage(table, [0, 1, 2], weights, bridges, owner)


def test_a_question_naming_a_speaker_finds_the_kind_only_in_their_rows() -> None:
    """"Which instrument is Ines learning?" is not answered by Sofia's cello: the kind counts
    only in a row of the speaker the question names; naming Sofia, or nobody, finds it."""
    who = [speaker_of(t, False) for t in WHOSE_ROWS]
    speakers = frozenset(who)
    ines = "Which instrument is Ines learning?"
    assert _instrument_found(ines, None) == 1.0  # without whose: anyone's cello
    assert _instrument_found(ines, whose(ines, who, speakers)) == 0.0
    sofia = "Which instrument is Sofia learning?"
    assert _instrument_found(sofia, whose(sofia, who, speakers)) == 1.0
    mine = "Which instrument am I learning?"
    assert whose(mine, who, speakers) is None
    assert _instrument_found(mine, whose(mine, who, speakers)) == 1.0


def test_a_person_who_never_speaks_here_restricts_nothing() -> None:
    """"Lena's son" of a memory where Lena is only spoken of: anyone's row may state it, and
    the question's own word counts in any row whoever the question names."""
    who = [speaker_of(t, False) for t in WHOSE_ROWS]
    assert whose("Which instrument does Lena's son play?", who, frozenset(who)) is None
    table = table_of(WHOSE_ROWS)
    owner = whose("Where did Ines see Sofia's cello?", who, frozenset(who))
    assert owner is not None and owner.named == {"ines", "sofia"}
    ines_only = whose("Which cello is Ines learning?", who, frozenset(who))
    assert bridged_coverage(table, [0], {"cello": 1.0}, {}, ines_only) == 1.0


def test_a_bridge_never_lowers_the_gates_coverage() -> None:
    """"Which cities has Yara been to?" of a chat where Ines names more cities: the best window
    by the cities' words is Ines's, where no city is Yara's; the question's words alone still
    reach Yara's own row, and the gate reads the better of the two."""
    rows = ["Ines: Back from Lisbon, Osaka and Krakow, what a month",
            "Yara: Wow, jealous!",
            "Ines: Next year Nairobi and Tbilisi",
            "Yara: I have been to Reykjavik once, long ago"]
    table = table_of(rows, minutes=[0.0, 1.0, 2.0, 900.0])  # the last row: a session alone
    question = "Which cities has Yara been to?"
    stems = query_stems(question)
    bridges = bridges_for(stems)
    who = [speaker_of(t, False) for t in rows]
    owner = whose(question, who, frozenset(who))
    args = (question, np.ones(table.n, bool), np.zeros(table.n), RankTuning(), None)
    alone = own_coverage(table, GateWords(tuple(stems)), *args)
    bridged = bridged_coverage(table, [0, 1, 2], gate_idf(table, stems), bridges, owner)
    assert bridged < alone
    assert own_coverage(table, GateWords(tuple(stems), bridges), *args, owner) >= alone
    # Yara's own row names a city: with the bridge her window holds every word asked.
    assert bridged_coverage(table, [3], gate_idf(table, stems), bridges, owner) == 1.0
