from hypothesis import given
from hypothesis import strategies as st

from strata.bot.commands import CommandRouter
from strata.core.tokens import count_tokens, truncate_to_tokens
from strata.core.wording import counted
from strata.core.words import terms
from strata.memory.engines.fts import match_query
from strata.memory.rules.profiles import MUTED, profile_for


def test_token_count_is_ceil_chars_over_four() -> None:
    assert count_tokens("") == 0
    assert count_tokens("abcd") == 1
    assert count_tokens("abcde") == 2


@given(st.text(max_size=400), st.integers(min_value=0, max_value=60))
def test_truncate_never_exceeds_budget(text: str, budget: int) -> None:
    cut = truncate_to_tokens(text, budget)
    if len(text) <= budget * 4:
        assert cut == text
    else:
        assert count_tokens(cut) <= budget


def test_fts_query_quotes_every_term() -> None:
    q = match_query("can't c++ foo(bar) * well-known error: body:x AND NEAR")
    assert q is not None
    for part in q.split(" OR "):
        assert part.startswith('"') and part.endswith('"')
    assert '"well"' in q and '"known"' in q and '"body"' in q


def test_fts_query_of_no_words_is_none() -> None:
    assert match_query("*** ::: ---") is None
    assert match_query("") is None


def test_stopwords_dropped_unless_nothing_left() -> None:
    assert terms("what is the name of my cat") == ["name", "cat"]
    assert terms("what is it") == ["what", "is", "it"]


def test_source_profiles() -> None:
    assert profile_for("user").episodes and profile_for("user").location
    assert profile_for("dmn").facts and not profile_for("dmn").geo
    assert profile_for("external-agent:calendar").episodes
    assert not profile_for("external-agent:calendar").location
    assert profile_for("delegate:x") == MUTED
    assert profile_for("scheduled") == MUTED
    assert profile_for("anything-else") == MUTED


def test_command_parsing() -> None:
    assert CommandRouter.parse("/forget my cat") == ("forget", "my cat")
    assert CommandRouter.parse("/help@strata_bot") == ("help", "")
    assert CommandRouter.parse("/ not a command") is None
    assert CommandRouter.parse("/123") is None
    assert CommandRouter.parse("hello /help") is None


def test_share_budget_cuts_the_long_texts_and_keeps_the_short_ones() -> None:
    from strata.core.tokens import count_tokens, share_budget

    texts = ["short one", "x " * 10_000, "also short", "y " * 50]
    out = share_budget(texts, 200)
    assert out[0] == "short one" and out[2] == "also short" and out[3] == texts[3]
    assert sum(count_tokens(t) for t in out) <= 200
    assert out[1].startswith("x x") and out[1].endswith("…")
    assert share_budget(["a", "b"], 100) == ["a", "b"]


def test_counts_read_in_the_right_number() -> None:
    assert counted(1, "transcript row") == "1 transcript row"
    assert counted(0, "transcript row") == "0 transcript rows"
    assert counted(2, "memory", "memories") == "2 memories"
    assert counted(1, "memory", "memories") == "1 memory"
    assert counted(12345, "fact") == "12,345 facts"
