"""The model-free path for plain first-person statements (`strata.memory.facts.plain`):
what it reads, and each class of sentence it must refuse."""

from __future__ import annotations

import pytest

from strata.memory.facts.plain import lasting, plain_candidates
from strata.memory.rules.statement_kind import statement_problem


def facts(text: str) -> list[tuple[str, str, str]]:
    return [(c.subject, c.attribute, c.text) for c in plain_candidates(7, text)]


@pytest.mark.parametrize(("said", "expected"), [
    ("my sister Ines lives in Porto", [("sister", "name", "Has a sister named Ines"),
                                       ("sister Ines", "home_city", "Sister Ines lives in Porto")]),
    ("I'm allergic to peanuts.", [("self", "", "Is allergic to peanuts")]),
    ("I work as a pharmacist", [("self", "job", "Works as a pharmacist")]),
    ("I live in Lyon.", [("self", "home_city", "Lives in Lyon")]),
    ("I have a dog called Rex!", [("dog", "name", "Has a dog named Rex")]),
    ("I'm a nurse.", [("self", "job", "Is a nurse")]),
    ("I have type 1 diabetes", [("self", "", "Has type 1 diabetes")]),
    ("I'm married", [("self", "marital_status", "Is married")]),
    ("I play the cello in an orchestra.", [("self", "", "Plays the cello in an orchestra")]),
    ("I keep bees in my garden.", [("self", "", "Keeps bees in their garden")]),
    ("Oh, I don't eat pork.", [("self", "", "Does not eat pork")]),
    ("I've got two kids, Noor and Sami.", [("kid Noor", "name", "Has a kid named Noor"),
                                            ("kid Sami", "name", "Has a kid named Sami")]),
])
def test_plain_statements_are_read(said: str, expected: list[tuple[str, str, str]]) -> None:
    assert facts(said) == expected


def test_a_candidate_quotes_its_sentence_and_passes_as_an_assertion() -> None:
    [cand] = plain_candidates(7, "Hi there. I live in Lyon. What about you?")
    assert cand.evidence == "I live in Lyon."
    assert cand.episode == 7 and cand.modality == "assertion" and cand.asserted_by_person
    assert cand.durable and not cand.correction and cand.kind == "user_specific"


@pytest.mark.parametrize("said", [
    "Do I live in Lyon?", "I live in Lyon?", "Where do I live again?", "Am I allergic to nuts?",
    "Is it weird that I'm allergic to peanuts",
])
def test_questions_give_nothing(said: str) -> None:
    assert facts(said) == []
    assert statement_problem(said) == "question"


@pytest.mark.parametrize("said", [
    "If I moved to Oslo, I'd need a coat.", "if i moved to Oslo I would live in Oslo",
    "I'd love to live in Japan one day.", "Maybe I'll get a dog called Rex.",
    "I might move to Berlin.", "Suppose I work as a pharmacist.", "Imagine I have a dog called Rex",
    "I'm thinking about becoming a nurse.", "I want to live in Lisbon.",
])
def test_hypotheticals_give_nothing(said: str) -> None:
    assert facts(said) == []


@pytest.mark.parametrize("said", [
    "My boss said I'm lazy.", "my mum thinks I'm a nurse", "Tom told me he lives in Oslo.",
    "According to Ana I live in Lyon.", "He says I'm allergic to peanuts.",
    'She was like "I live in Lyon".', "People keep telling me I'm a nurse.",
])
def test_reported_speech_gives_nothing(said: str) -> None:
    assert facts(said) == []


@pytest.mark.parametrize("said", [
    "I'm a professional couch potato lol", "I live in my car haha", "I'm a doctor, jk",
    "Yeah right, I'm a nurse.", "I live in Buckingham Palace, just kidding",
    "I'm a genius /s", "Sure, and I live in Paris.", "I live on the moon 😂",
])
def test_jokes_give_nothing(said: str) -> None:
    assert facts(said) == []


@pytest.mark.parametrize("said", [
    "I don't live in Paris anymore.", "I'm not a nurse.", "I never lived in Lyon.",
    "I'm not married", "I do not have a dog called Rex.", "My sister Ines doesn't live in Porto",
])
def test_negations_state_no_positive_fact(said: str) -> None:
    assert facts(said) == []


@pytest.mark.parametrize("said", [
    "I'm tired today.", "I'm in Berlin right now.", "I'm a bit hungry at the moment",
    "I'm at the dentist this afternoon.",
])
def test_passing_moments_give_nothing(said: str) -> None:
    assert facts(said) == []


@pytest.mark.parametrize("said", ["Actually I moved to Lyon.", "No, I live in Lyon.",
                                  "Sorry, I live in Lyon", "actually, I live in Lyon now"])
def test_a_correction_is_marked(said: str) -> None:
    [cand] = plain_candidates(1, said)
    assert cand.correction and cand.attribute == "home_city" and cand.text == "Lives in Lyon"


def test_names_and_places_must_be_written_as_names() -> None:
    assert facts("I live in a flat.") == []
    assert facts("I'm a big fan of jazz.") == [("self", "", "Is a fan of jazz")]
    assert facts("I'm a bit of a nerd.") == []
    assert facts("I love you") == []


def test_lasting_is_decided_by_code_where_it_can_be() -> None:
    assert lasting("I play the cello.") is True
    assert lasting("I have type 1 diabetes") is True
    assert lasting("I'm married and we have three kids.") is True
    assert lasting("I'm tired today.") is False
    assert lasting("We went to the cinema.") is None


@pytest.mark.parametrize(("said", "expected"), [
    # The family's pets and people are the person's too ("we", "our").
    ("We have a cat called Mochi.", [("cat", "name", "Has a cat named Mochi")]),
    ("Our dog Juno chewed my shoe again.", [("dog", "name", "Has a dog named Juno")]),
    # A relative who moved somewhere lives there.
    ("My brother Tomas moved to Cork last year.",
     [("brother", "name", "Has a brother named Tomas"),
      ("brother Tomas", "home_city", "Brother Tomas lives in Cork")]),
    ("I have a kiwi allergy, a bad one.", [("self", "", "Is allergic to kiwi")]),
    ("Home is Porto for me, I've been here ten years.",
     [("self", "home_city", "Lives in Porto")]),
    ("Born in 1991 in a small town.", [("self", "birth_year", "Was born in 1991")]),
    ("I just finished work, long shift at the bakery.",
     [("self", "workplace", "Works at the bakery")]),
])
def test_more_plain_forms_are_read(said: str, expected: list[tuple[str, str, str]]) -> None:
    assert facts(said) == expected


@pytest.mark.parametrize("said", [
    "I was born in 1987. No wait, typo: 1983.", "Born in 1987, I mean 1983, sorry, long day.",
    "I was born in 1987, sorry, 1983.",
])
def test_a_number_corrected_in_the_next_breath_is_stored_corrected(said: str) -> None:
    [cand] = plain_candidates(1, said)
    assert cand.text == "Was born in 1983" and cand.attribute == "birth_year"
    assert "1987" in cand.evidence and "1983" in cand.evidence  # the words as said


@pytest.mark.parametrize("said", [
    "I covered my sister's shift at the bakery.", "My wife has a long shift at the hospital.",
    "Our neighbours have a cat called Mochi.", "We have to call Mochi.",
])
def test_someone_elses_work_or_pet_is_not_the_persons(said: str) -> None:
    assert facts(said) == []


def test_one_profession_list_serves_the_reader_and_recalls_bridge() -> None:
    # Recall's job bridge knew "locksmith" and the reader did not: the person said their job
    # and no fact was stored, while recall could find the line by kind.
    assert facts("I'm a locksmith.") == [("self", "job", "Is a locksmith")]
    assert facts("My sister is a florist in Cork.") == [
        ("sister", "job", "Sister is a florist in Cork")]
