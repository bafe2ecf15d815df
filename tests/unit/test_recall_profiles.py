"""What a memory ties to each person it names (strata.memory.recall.profiles), and the
gate's penalty for a question about things this memory's person never had."""

from __future__ import annotations

import pytest

from strata.memory.recall.gate import gate_logit
from strata.memory.recall.profiles import (
    ProfileCache,
    add_notes,
    asked_of,
    build_profiles,
    speaker_of,
    unowned,
)
from strata.memory.recall.rank import RankTuning
from strata.memory.rules.names import NameCheck
from tests.unit.test_recall_rank import table_of

# A chat of John and Maria, as the row index keeps it (the speaker's name first).
ROWS = ["John: my team won the county league last night",
        "Maria: congrats! how is your knee after the game?",
        "John: sore, but our coach says I can play Sunday",
        "Maria: my kids made posters for John's dog Max",
        "Maria: they love that dog"]


def test_a_person_has_what_they_call_theirs_what_is_said_to_be_theirs_and_whats_named() -> None:
    t = table_of(ROWS)
    profiles = build_profiles(ROWS, [False] * len(ROWS), t.prev.tolist())
    # "my team", "our coach" in John's rows; "your knee" in Maria's answer to him;
    # "John's dog" in Maria's row.
    assert {"team", "coach", "knee", "dog"} <= profiles["john"]
    # Maria's kids are hers, not John's; the words around them are nobody's.
    assert "kid" in profiles["maria"] and "kid" not in profiles["john"]
    assert "poster" not in profiles["john"] | profiles["maria"]
    # "your" in a row that answers nobody (a new channel) ties nothing to anyone.
    lone = ["Maria: how is your knee?"]
    assert build_profiles(lone, [False], [-1]) == {}


def test_the_speaker_is_the_name_the_row_begins_with_and_the_bot_has_none() -> None:
    assert speaker_of("John: my team won", bot=False) == "john"
    assert speaker_of("Ada Lovelace: my engine", bot=False) == "ada"
    assert speaker_of("alice I started as a pharmacist june", bot=False) == "alice"
    assert speaker_of("Happy to help with your job search", bot=True) == ""
    # The bot's "your X" answering a person still ties X to that person.
    texts = ["alice my interview is tomorrow june", "Good luck with your interview!"]
    assert build_profiles(texts, [False, True], [-1, 0]) == {"alice": frozenset({"interview"})}


def test_a_question_ties_things_to_the_known_person_it_names() -> None:
    [asked] = asked_of("What is John's position on the team he signed with?", ["john"])
    assert asked.person == "john" and asked.things == (("posit",),)
    # "his X" is the named person's when the question names exactly one known person.
    [asked] = asked_of("What does John want to do after his basketball career?", ["john"])
    assert asked.things == (("basketbal",),)
    assert asked_of("Did John meet Maria's sister at his party?", ["john", "maria"])[0].things \
        == (("sister",),)
    # Nothing tied to anyone: no possessive, or a stranger's.
    assert asked_of("What did John do in June?", ["john"]) == []
    assert asked_of("What is Gertrude's job?", []) == []


def test_unowned_is_a_known_persons_thing_the_memory_never_ties_to_them() -> None:
    t = table_of(ROWS)
    profiles = build_profiles(ROWS, [False] * len(ROWS), t.prev.tolist())
    assert not unowned("How did John's team do?", t, profiles)
    assert not unowned("How is John's knee?", t, profiles)
    assert not unowned("What is the name of John's dog?", t, profiles)
    # Another John's things.
    assert unowned("What did John's teammates give him?", t, profiles)
    assert unowned("What does John want to do after his basketball career?", t, profiles)
    # One of the things asked being his is enough.
    assert not unowned("Did John's wife come to John's team party?", t, profiles)
    # No possessive, a stranger, or a person the memory ties nothing to: no evidence.
    assert not unowned("What did John play on Sunday?", t, profiles)
    assert not unowned("What is Gertrude's job?", t, profiles)
    assert not unowned("What is Max's favourite toy?", t, {**profiles, "max": frozenset()})
    # A note (a fact, an episode summary) that calls it his makes it his.
    assert unowned("What is John's job?", t, profiles)
    assert not unowned("What is John's job?", t, add_notes(profiles, ["John's job is nursing"]))


def test_the_penalty_is_the_weight_when_unowned_and_the_cache_builds_once_per_table() -> None:
    t = table_of(ROWS)
    cache = ProfileCache(owners=2)
    first = cache.get(1, t, ROWS)
    assert cache.get(1, t, ROWS) is first  # the same table: not built again
    assert cache.penalty(1, t, ROWS, "What did John's teammates give him?", [], 2.5) == 2.5
    assert cache.penalty(1, t, ROWS, "How did John's team do?", [], 2.5) == 0.0
    assert cache.penalty(1, t, ROWS, "What did John's teammates give him?", [], 0.0) == 0.0
    # A new table (a new row arrived) is a new profile; at most `owners` owners are kept.
    grown = table_of([*ROWS, "John: my teammates gave me a signed ball"])
    texts = [*ROWS, "John: my teammates gave me a signed ball"]
    assert cache.penalty(1, grown, texts, "What did John's teammates give him?", [], 2.5) == 0.0
    cache.get(2, t, ROWS)
    cache.get(3, t, ROWS)
    assert cache.get(1, t, ROWS) is not first


def test_the_gate_subtracts_the_unowned_penalty() -> None:
    tuning = RankTuning()
    known = NameCheck(familiar=True)
    assert gate_logit(1.0, 0.5, known, tuning, unowned=2.0) == pytest.approx(
        gate_logit(1.0, 0.5, known, tuning) - 2.0)
    # A penalty, not a veto: a passage holding the whole question still opens the gate.
    assert gate_logit(2.0, 1.0, known, tuning, unowned=2.0) > 0


def test_the_cache_keeps_each_rows_speaker_per_table() -> None:
    t = table_of(ROWS)
    cache = ProfileCache(owners=2)
    who, names = cache.speakers(1, t, ROWS)
    assert who == ["john", "maria", "john", "maria", "maria"]
    assert names == {"john", "maria"}
    assert cache.speakers(1, t, ROWS)[0] is who  # the same table: not read again
    profiles = cache.get(1, t, ROWS)  # profiles built beside the speakers, once
    assert cache.get(1, t, ROWS) is profiles and "team" in profiles["john"]
    grown = table_of([*ROWS, "Tim: hi"])
    assert cache.speakers(1, grown, [*ROWS, "Tim: hi"])[1] == {"john", "maria", "tim"}
