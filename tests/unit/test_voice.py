"""A text's first person told in the second or third person (`strata.core.voice`)."""

from __future__ import annotations

import pytest

from strata.core.voice import opens_in_first_person, told_as


@pytest.mark.parametrize(("text", "you", "they"), [
    ("I am a nurse.", "You are a nurse.", "They are a nurse."),
    ("I'm allergic to kiwi", "You're allergic to kiwi", "They're allergic to kiwi"),
    ("My brother lives in Tartu, near me.", "Your brother lives in Tartu, near you.",
     "Their brother lives in Tartu, near them."),
    ("As an accountant, I have a brother.", "As an accountant, you have a brother.",
     "As an accountant, they have a brother."),
])
def test_the_first_person_is_told(text: str, you: str, they: str) -> None:
    assert opens_in_first_person(text)
    assert told_as(text, "you") == you and told_as(text, "they") == they


@pytest.mark.parametrize("text", ["Is allergic to kiwi", "Alice lives in Lyon.",
                                  "Imagine that.", "Island life suits them."])
def test_other_texts_do_not_open_in_the_first_person(text: str) -> None:
    assert not opens_in_first_person(text)
