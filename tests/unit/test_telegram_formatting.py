"""Markdown → Telegram HTML (`strata.adapters.telegram.formatting`), checked against the fake Bot
API's parser, which follows Telegram's rules for what HTML it accepts."""

from __future__ import annotations

import pytest

from strata.adapters.telegram.formatting import balanced, to_html
from tests.fakes.telegram_api import parse_formatted_text


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


def test_overlapping_markup_falls_back_to_escaped_text() -> None:
    raw = "**a *b** c*"
    markup = to_html(raw)
    assert balanced(markup)
    assert shown(markup)[0] == raw


def test_balanced() -> None:
    assert balanced("<b>x <i>y</i></b>")
    assert not balanced("<b>x <i>y</b></i>")
    assert not balanced("<b>x")
