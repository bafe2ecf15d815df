"""Research feeds are untrusted XML: `parse_feed` refuses an entity bomb and an external entity
with a clear `ConnectorError` before expanding or reading anything, and still reads ordinary
RSS and Atom (an RSS 0.91 feed with its public DOCTYPE included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from strata.cognition.connectors import ConnectorError
from strata.cognition.research import parse_feed

# Ten levels of ten: fully expanded, `&lol9;` is 10**9 copies of "lol" (about 3 GB).
BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE rss [\n<!ENTITY lol "lol">\n'
    + b"".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n'.encode()
        for i in range(1, 10)
    )
    + b"]>\n<rss version=\"2.0\"><channel><item><title>&lol9;</title>"
    b"<link>https://ex.org/boom</link></item></channel></rss>"
)


def external_entity_feed(target: str) -> bytes:
    return (f'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY leak SYSTEM "{target}">]>'
            '<rss version="2.0"><channel><item><title>news</title>'
            "<link>https://ex.org/a</link><description>&leak;</description>"
            "</item></channel></rss>").encode()


def test_a_billion_laughs_feed_is_refused_before_it_expands() -> None:
    assert len(BILLION_LAUGHS) < 1000
    with pytest.raises(ConnectorError, match=r"feed\.xml: refused: the feed declares XML "
                                             r"entities") as refused:
        parse_feed(BILLION_LAUGHS, "feed.xml")
    assert len(str(refused.value)) < 300  # a short message, not the expansion


def test_an_external_entity_is_refused_and_the_file_it_names_is_never_read(
        tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the operator's password")
    for target in (secret.as_uri(), "http://127.0.0.1:9/leak"):
        with pytest.raises(ConnectorError, match="refused") as refused:
            parse_feed(external_entity_feed(target), "evil")
        assert "password" not in str(refused.value)


def test_ordinary_rss_atom_and_a_public_doctype_still_parse() -> None:
    rss = (b'<?xml version="1.0"?><!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS '
           b'0.91//EN" "http://my.netscape.com/publish/formats/rss-0.91.dtd">'
           b'<rss version="0.91"><channel><item><title>Gym &amp; climbing</title>'
           b"<link>https://ex.org/gym</link><description>Lyon</description></item>"
           b"</channel></rss>")
    [item] = parse_feed(rss, "rss")
    assert (item.title, item.url, item.snippet) == ("Gym & climbing", "https://ex.org/gym",
                                                    "Lyon")
    atom = (b'<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>Knit</title>'
            b'<link href="https://ex.org/knit"/><summary>Wool.</summary></entry></feed>')
    assert [f.url for f in parse_feed(atom, "atom")] == ["https://ex.org/knit"]


def test_what_is_not_xml_is_still_not_a_feed() -> None:
    with pytest.raises(ConnectorError, match="not an RSS/Atom feed"):
        parse_feed(b"<html><body>Sign in", "page")
