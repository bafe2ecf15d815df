"""Markdown → Telegram HTML (`strata.adapters.telegram.formatting`, on the shared parser of
`strata.adapters.markdown`), checked against the fake Bot API's parser, which follows
Telegram's rules for what HTML it accepts."""

from __future__ import annotations

import pytest

from strata.adapters.telegram.formatting import to_html
from tests.fakes.telegram_api import ApiError, parse_formatted_text


def shown(markup: str) -> tuple[str, list[tuple[str, str]]]:
    """What Telegram would show: the plain text and (entity type, covered text) pairs."""
    text, entities = parse_formatted_text(markup, "HTML", None, {})
    return text, [(e["type"], text[e["offset"]: e["offset"] + e["length"]]) for e in entities]


def test_model_text_is_escaped() -> None:
    assert to_html("1 < 2 & 3 > 2 <b>not a tag</b>") == (
        "1 &lt; 2 &amp; 3 &gt; 2 &lt;b&gt;not a tag&lt;/b&gt;"
    )
    assert shown(to_html("if a<b and c>d"))[0] == "if a<b and c>d"


def test_simple_markdown_becomes_entities() -> None:
    text, entities = shown(to_html(
        "# Plan\n**bold** and *italic* and _also_ and ~~gone~~, `x < y`, "
        "[docs](https://example.org/?a=1&b=2)"
    ))
    assert text == "Plan\nbold and italic and also and gone, x < y, docs"
    assert ("bold", "Plan") in entities and ("bold", "bold") in entities
    assert ("italic", "italic") in entities and ("italic", "also") in entities
    assert ("strikethrough", "gone") in entities and ("code", "x < y") in entities
    assert ("text_link", "docs") in entities
    assert 'href="https://example.org/?a=1&amp;b=2"' in to_html("[docs](https://example.org/?a=1&b=2)")


def test_code_blocks_are_kept_verbatim() -> None:
    markup = to_html("Try:\n```python\nif a < b:\n    print(**kw)\n```\ndone")
    assert '<pre><code class="language-python">' in markup
    text, entities = shown(markup)
    assert "if a < b:\n    print(**kw)" in text
    assert [kind for kind, _ in entities] == ["pre"]


@pytest.mark.parametrize(
    "plain",
    [
        "snake_case_name and __init__ stay as they are",
        "2 * 3 * 4 = 24",
        "* a bullet\n* another bullet",
        "a lonely ** and a lonely `",
    ],
)
def test_things_that_are_not_markdown_stay_text(plain: str) -> None:
    text, entities = shown(to_html(plain))
    assert text == plain.strip()
    assert entities == []


def test_overlapping_markup_still_gives_html_telegram_accepts() -> None:
    """`**a *b** c*` cannot be drawn as written: the parser nests it, so the tags are balanced
    (Telegram refuses any other HTML, as the next test shows) and every word is shown."""
    text, entities = shown(to_html("**a *b** c*"))
    assert text == "a b c"
    assert entities and {kind for kind, _ in entities} == {"italic"}


@pytest.mark.parametrize("markup", ["<b>x <i>y</b></i>", "<b>x"])
def test_telegram_refuses_unbalanced_html(markup: str) -> None:
    with pytest.raises(ApiError, match="can't parse entities"):
        shown(markup)


def test_line_breaks_and_indents_are_kept() -> None:
    raw = "Steps:\n  1. boil\n  2. pour\n\n\nDone, **enjoy**."
    text, entities = shown(to_html(raw))
    assert text == "Steps:\n  1. boil\n  2. pour\n\n\nDone, enjoy."
    assert entities == [("bold", "enjoy")]


def test_only_links_telegram_opens_are_links() -> None:
    assert shown(to_html("[x](javascript:alert(1))")) == ("[x](javascript:alert(1))", [])
    assert shown(to_html("[write](mailto:a@example.org)"))[1] == [("text_link", "write")]


def test_an_unclosed_fence_is_code_to_the_end() -> None:
    """While a reply streams, its code block is not closed yet: it shows as code already."""
    text, entities = shown(to_html("Try:\n```sh\nls -l"))
    assert text == "Try:\nls -l" and [kind for kind, _ in entities] == ["pre"]
