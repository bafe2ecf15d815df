"""The PostgreSQL engine's statement translation, its URL checks and its dialect helpers."""

from __future__ import annotations

import pytest

from strata.core.config import ConfigError, load_settings
from strata.memory.engines import pg
from strata.memory.engines.dialect import SQLITE
from strata.memory.engines.pg.database import redacted
from strata.memory.engines.pg.dialect import POSTGRES, websearch_query
from strata.memory.engines.pg.sql import bind, translate


@pytest.mark.parametrize(("sqlite", "postgres"), [
    ("SELECT * FROM t WHERE a = ? AND b IN (?,?)",
     "SELECT * FROM t WHERE a = %s AND b IN (%s,%s)"),
    ("SELECT '?', \"odd?name\" FROM t WHERE c = ?", "SELECT '?', \"odd?name\" FROM t WHERE c = %s"),
    ("SELECT 'it''s ?' || ?", "SELECT 'it''s ?' || %s"),
    ("SELECT a % 2 FROM t WHERE b LIKE 'x%' AND c = ?",
     "SELECT a %% 2 FROM t WHERE b LIKE 'x%%' AND c = %s"),
    ("SELECT 1 -- why? because\nFROM t WHERE d = ?",
     "SELECT 1 -- why? because\nFROM t WHERE d = %s"),
    ("SELECT 1 WHERE a IN () AND b NOT in ( ) AND c = 'IN ()'",
     "SELECT 1 WHERE a = ANY('{}') AND b <> ALL('{}') AND c = 'IN ()'"),
])
def test_marks_become_psycopg_placeholders_outside_literals(sqlite: str, postgres: str) -> None:
    assert translate(sqlite) == postgres


# What the regex translator got wrong (a `?`, quote or `IN ()` inside a block comment, an
# `E'…'` string with a backslash-escaped quote, dollar quoting): read by a lexer now.
@pytest.mark.parametrize(("sqlite", "postgres"), [
    ("SELECT 1 /* a ? b */ WHERE d = ?", "SELECT 1 /* a ? b */ WHERE d = %s"),
    ("SELECT 1 /* IN () */, ?", "SELECT 1 /* IN () */, %s"),
    ("SELECT 1 /* don't */, ?", "SELECT 1 /* don't */, %s"),
    ("SELECT 1 /* outer /* nested ? */ still ? */, ?",
     "SELECT 1 /* outer /* nested ? */ still ? */, %s"),
    ("SELECT E'it\\'s ?', ?", "SELECT E'it\\'s ?', %s"),
    ("SELECT $$a ? b$$, $q$ it's ?1 $q$, ?", "SELECT $$a ? b$$, $q$ it's ?1 $q$, %s"),
    ("SELECT 'C:\\', ?", "SELECT 'C:\\', %s"),
    ("SELECT ?::bigint, x <=> ?, a?? FROM t WHERE b IN(/* none */)",
     "SELECT %s::bigint, x <=> %s, a%s%s FROM t WHERE b = ANY('{}')"),
    ("SELECT ? -- 100%", "SELECT %s -- 100%%"),
])
def test_a_lexer_reads_what_a_regex_mistranslated(sqlite: str, postgres: str) -> None:
    assert translate(sqlite) == postgres


@pytest.mark.parametrize("broken", ["SELECT 'unterminated ?", 'SELECT "open ?', "SELECT /* open ?"])
def test_a_statement_the_lexer_cannot_read_is_refused_not_guessed(broken: str) -> None:
    with pytest.raises(ValueError, match="cannot read the statement"):
        translate(broken)


@pytest.mark.parametrize(("sqlite", "postgres"), [
    ("SELECT a FROM t WHERE id IN (?,?,?) AND b IN (?,?) AND c = ?",
     "SELECT a FROM t WHERE id IN (%s,%s,%s) AND b IN (%s,%s) AND c = %s"),
    ("SELECT '?,?' FROM t WHERE id IN (?,?)", "SELECT '?,?' FROM t WHERE id IN (%s,%s)"),
    ("SELECT 1 -- ?,?\nFROM t WHERE id IN (?,?)", "SELECT 1 -- ?,?\nFROM t WHERE id IN (%s,%s)"),
    ("SELECT '%s', x % 2 FROM t WHERE id IN (?,?)",
     "SELECT '%%s', x %% 2 FROM t WHERE id IN (%s,%s)"),
])
def test_lists_of_marks_of_any_length_translate_as_written(sqlite: str, postgres: str) -> None:
    """A list of ids is lexed once per statement shape, not once per list length (a recall
    search on PostgreSQL lexed three new statements every time): the result is the same."""
    assert translate(sqlite) == postgres
    longer = sqlite.replace("IN (?,?)", "IN (?,?,?,?,?,?,?)")
    assert translate(longer) == postgres.replace("IN (%s,%s)", "IN (%s,%s,%s,%s,%s,%s,%s)")


def test_numbered_marks_bind_by_name() -> None:
    assert bind("SELECT ?2, ?1 WHERE a = ?1", (5, "x")) == (
        "SELECT %(p2)s, %(p1)s WHERE a = %(p1)s", {"p1": 5, "p2": "x"})
    assert bind("SELECT ? WHERE '?1' = ?", (1, 2)) == ("SELECT %s WHERE '?1' = %s", (1, 2))
    assert bind("SELECT ?1::text, ?2 /* ?3 */, ?1", ("a", "b")) == (
        "SELECT %(p1)s::text, %(p2)s /* ?3 */, %(p1)s", {"p1": "a", "p2": "b"})
    with pytest.raises(ValueError, match="mixes"):
        translate("SELECT ?1, ?")


def test_a_postgres_url_chooses_the_server_and_a_path_stays_sqlite() -> None:
    env = {"HOME": "/home/x"}
    url = "postgresql://strata:secret@db.internal:5432/strata"
    for given in ({"STRATA_DB": url}, {"STRATA_DB_URL": url}):
        db = load_settings(None, env={**env, **given}).db
        assert (db.url, db.path, db.target) == (url, "", url)
        assert "secret" not in repr(db)
    db = load_settings(None, env={**env, "STRATA_DB": "/data/strata.db"}).db
    assert (db.url, db.target) == ("", "/data/strata.db")
    with pytest.raises(ConfigError, match="postgresql://"):
        load_settings(None, env={**env, "STRATA_DB_URL": "mysql://x/y"})
    assert pg.is_url(url) and pg.is_url("postgres://h/d")
    assert not pg.is_url("/data/postgresql://.db") and not pg.is_url("strata.db")


def test_messages_never_show_the_password() -> None:
    assert redacted("postgresql://bob:s3:cr@t@db:5432/strata?sslmode=require") == \
        "postgresql://bob:***@db:5432/strata?sslmode=require"
    assert redacted("postgresql:///strata?host=/run/pg") == "postgresql:///strata?host=/run/pg"


def test_keyword_queries_quote_every_word_on_both_engines() -> None:
    assert websearch_query("Can't we use c++ or *?") == '"can" or "use" or "c"'
    assert websearch_query("...") is None
    assert SQLITE.keyword_query("the river") == '"river"'
    assert POSTGRES.keyword_query("the river") == '"river"'


def test_vector_statements_take_only_plain_names() -> None:
    assert "fact_vec" in POSTGRES.knn_sql("fact_vec", "fact_id")
    with pytest.raises(ValueError):
        SQLITE.knn_sql("fact_vec; DROP TABLE facts", "fact_id")
