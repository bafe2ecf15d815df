"""A model's summary must be about its source (`strata.memory.checks.grounding.check_summary`,
which replaced `text.grounded`): the same cases, through the one grounding rule."""

from strata.memory.checks import grounding


def grounded(summary: str, source: str) -> bool:
    return grounding.check_summary(summary, [source], layer=grounding.EPISODES) is None


def test_a_summary_is_grounded_when_enough_of_its_words_come_from_the_source() -> None:
    source = "Ron went hiking near Oslo with Mia. Ron hiked again with Mia in June."
    assert grounded("Ron and Mia hiked near Oslo in June.", source)
    assert grounded("Ron enjoys hiking trips around Oslo with his friend Mia.", source)
    assert not grounded("{#13}. [The people at the beach],", source)
    assert not grounded("", source)
    assert not grounded("The the and of", source)  # no content word at all
    assert not grounded("Ron and Mia hiked near Bergen in June.", source)  # a name it lacks
