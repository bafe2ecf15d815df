"""Python stems a word as the engine's keyword index stores it, on both engines (run with
STRATA_TEST_ENGINE=sqlite and =postgres): SQLite's FTS5 `porter unicode61` tokenizer, and
PostgreSQL's `to_tsvector('english', …)`. And what `/forget` and fact search look for as the
start of a word stays a prefix of it, whatever the stemmer made of it."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from strata.core.clock import ManualClock
from strata.core.words import STOPWORDS
from strata.memory.engines.db import Database
from strata.memory.engines.dialect import SQLITE
from strata.memory.rules.text import stem, stem_prefix, term_coverage, word_pattern
from tests.memory_helpers import channel, person, turn

# Plurals, -ing, -ed, -ly, names (as written and possessive), numbers, a diacritic, the words
# where Porter's own release departs from the 1980 paper (`ecology`, `incredibly`), and a word
# too long for FTS5 to stem.
PHRASES = (
    "cats", "sisters", "parties", "boxes", "glasses", "skies", "classes", "news",
    "running", "painting", "hiking", "swimming", "dying", "camping",
    "painted", "added", "trekked", "hoped", "studied", "agreed",
    "happily", "generously", "quickly", "happy", "happiness",
    "Paris", "Lyon", "Ines", "Caroline", "Melanie", "Joanna",
    "Paris's", "Caroline's", "Ines'", "Lyon’s",
    "ecology", "psychology", "incredibly", "relational", "conditional",
    "2023", "1990s", "café",
    "y" * 62 + "ings",  # longer than FTS5's porter stems (64 bytes): stored as written
)
_WORD = re.compile(r"\w+")


async def _index_terms(db: Database, ids: list[int]) -> dict[int, set[str]]:
    """What the engine's index over the transcript's text stores for each row."""
    if db.dialect.name == "sqlite":
        await db.execute_write("CREATE VIRTUAL TABLE index_words"
                               " USING fts5vocab('transcript_fts', 'instance')")
        rows = await db.fetchall("SELECT doc, term FROM index_words")
    else:  # the expression its GIN index is built on (migration 0001)
        rows = await db.fetchall(
            "SELECT t.id, w.lexeme FROM transcript t,"
            " unnest(to_tsvector('english', t.content)) AS w")
    out: dict[int, set[str]] = {i: set() for i in ids}
    for row_id, term in rows:
        out[int(row_id)].add(str(term))
    return out


async def test_python_stems_as_the_engines_index_stores(db: Database) -> None:
    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    ann = await person(db, "ann", clock)
    chat = await channel(db, ann, "dm", clock)
    ids = [(await turn(db, chat, ann, phrase, clock))[0] for phrase in PHRASES]
    stored = await _index_terms(db, ids)
    for row_id, phrase in zip(ids, PHRASES, strict=True):
        words = _WORD.findall(phrase.lower())
        # A possessive's `s` is a stopword: PostgreSQL drops it, FTS5 keeps it; neither is
        # what this test is about.
        expected = {db.dialect.stem(w) for w in words if w not in STOPWORDS}
        assert stored[row_id] - {db.dialect.stem(w) for w in words if w in STOPWORDS} \
            == expected, phrase
    assert {stem(w) for w in ("paris", "running", "ecology", "café")} == {
        "pari", "run", "ecolog", "cafe"}
    assert SQLITE.stem is stem  # recall's stemmer is SQLite's index's


def test_what_is_searched_as_a_word_start_is_a_prefix_of_the_word() -> None:
    for phrase in PHRASES:
        for word in _WORD.findall(phrase.lower()):
            assert word.startswith(stem_prefix(word)), word
            assert word_pattern(word).search(phrase), phrase
    # Porter makes `happy` `happi`: the prefix `happ` still finds both spellings.
    assert stem("happy") == "happi" and stem_prefix("happy") == "happ"
    assert term_coverage(["happy"], "Such happiness!") == 1.0
    assert term_coverage(["cats"], "Our Cat's bowl") == 1.0
    assert term_coverage(["zorblax"], "an xzorblax") == 0.0
