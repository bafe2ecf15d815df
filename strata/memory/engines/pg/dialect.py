"""PostgreSQL's statements for what cannot be written once (see `strata.memory.engines.dialect`).

Keyword search: the text is parsed with the `english` configuration (Snowball's `english`
stemmer, `english_stem`, where FTS5 uses Porter's) through GIN indexes (migrations 0001,
0004); the query's words are OR-ed, as `strata.memory.engines.fts.match_query` OR-s them for
FTS5, and `websearch_to_tsquery` never fails on user text. The score is `-ts_rank_cd`, so
lower is better as with bm25; its scale differs from bm25's. Vector search: an exact scan of
the owner's vectors ordered by pgvector's cosine distance `<=>` (1 - cosine, as sqlite-vec's).
Imports `strata.memory.engines.dialect` and `strata.memory.engines.fts`.
"""

from __future__ import annotations

import functools
import threading

import snowballstemmer

from strata.core.words import terms
from strata.memory.engines.dialect import Dialect

# The same Snowball algorithm PostgreSQL's `english_stem` dictionary runs. Snowball releases
# differ on a few words (3.x keeps `organiz…` and `universal` whole, PostgreSQL 18's copy
# makes them `organ` and `univers`); the engines test checks a word list against the server.
# The advisory lock every write transaction takes first (any constant; "Strata" in ASCII).
WRITE_LOCK = 0x537472617461
_ENGLISH = snowballstemmer.stemmer("english")
_ENGLISH_LOCK = threading.Lock()  # a Snowball stemmer object keeps state while it works


@functools.lru_cache(maxsize=65536)
def english_stem(word: str) -> str:
    """The lexeme `to_tsvector('english', …)` stores for one lower-cased word that is not an
    English stopword (those it drops): `paris` -> `pari`, `dying` -> `die`."""
    with _ENGLISH_LOCK:
        return str(_ENGLISH.stemWord(word))


def update_or_ignore(table: str, column: str, keys: list[tuple[str, ...]]) -> str:
    """SQLite's `UPDATE OR IGNORE` for one column: a row whose new value would collide with
    another row's on a unique key is left as it is. The check reads the rows as they were
    before the statement; rows it moves keep apart from each other (they differed in the
    other columns of every key while they shared the old value)."""
    quoted = f'"{table}"'
    clauses = [
        " AND NOT EXISTS (SELECT 1 FROM " + quoted + " o WHERE "
        + " AND ".join(f'o."{c}" = ?1' if c == column else f'o."{c}" = {quoted}."{c}"'
                       for c in key) + ")"
        for key in keys
    ]
    return (f'UPDATE {quoted} SET "{column}" = ?1 WHERE "{column}" = ?2' + "".join(clauses))


def websearch_query(text: str) -> str | None:
    """`"w1" or "w2" …` for `websearch_to_tsquery`: each word of `text` quoted (words are
    `\\w+`, so no quote can be inside), OR-ed; None when `text` has no words."""
    found = terms(text)
    return " or ".join(f'"{t}"' for t in found) if found else None


POSTGRES = Dialect(
    name="postgres",
    keyword_query=websearch_query,
    stem=english_stem,
    transcript_search=(
        "SELECT t.*, -ts_rank_cd(to_tsvector('english', t.content), q) AS score"
        " FROM transcript t, websearch_to_tsquery('english', ?) q"
        " WHERE to_tsvector('english', t.content) @@ q AND t.owner_id = ?"
        " AND t.kind = 'message' ORDER BY score, t.id LIMIT ?"
    ),
    vectors=("SELECT {key}, embedding FROM {table}"
             " WHERE {key} IN (SELECT jsonb_array_elements_text(?::jsonb)::bigint)"),
    knn=("SELECT {key}, embedding <=> ? AS distance FROM {table} WHERE owner_id = ?"
         " ORDER BY distance, {key} LIMIT ?"),
    # Owner scoping is a plain `owner_id = ?` condition here: the query stays as it is.
    scoped=lambda query, owner_id, columns: query,
    # Stored tsvector columns with GIN indexes (migration 0004): ranking reads them as stored.
    fact_search=(
        "SELECT f.id, -ts_rank_cd(f.words, q) AS s"
        " FROM facts f, websearch_to_tsquery('english', ?) q"
        " WHERE f.words @@ q"
        " AND f.owner_id = ? AND f.status = 'live' ORDER BY s, f.id LIMIT ?"
    ),
    # The parameters arrive in SQLite's order; a CTE names them so the owner can narrow the
    # newest-`scan` window as FTS5's owner column does.
    episode_search=(
        "WITH p AS (SELECT websearch_to_tsquery('english', ?) AS q, ?::bigint AS scan,"
        " ?::bigint AS owner, ?::bigint AS k)"
        " SELECT f.id, f.s FROM (SELECT e.id,"
        " -ts_rank_cd(e.words, p.q) AS s"
        " FROM episodes e, p"
        " WHERE e.words @@ p.q"
        " AND e.owner_id = p.owner AND e.tombstoned_at IS NULL"
        " ORDER BY e.id DESC LIMIT (SELECT scan FROM p)) AS f"
        " ORDER BY f.s, f.id LIMIT (SELECT k FROM p)"
    ),
    # No rowid: the physical position, which follows insertion for rows never updated.
    insertion_order="ctid",
    data_tables=(
        "SELECT table_name::text, 0 FROM information_schema.tables"
        " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        " ORDER BY table_name"
    ),
    table_columns=(
        "SELECT a.attname::text, COALESCE((SELECT k.n FROM pg_index i,"
        " unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)"
        " WHERE i.indrelid = a.attrelid AND i.indisprimary AND k.attnum = a.attnum), 0),"
        " upper(format_type(a.atttypid, a.atttypmod))"
        " FROM pg_attribute a WHERE a.attrelid = ?::regclass AND a.attnum > 0"
        " AND NOT a.attisdropped AND a.attgenerated = '' ORDER BY a.attnum"
    ),
    table_parents=(
        "SELECT c.confrelid::regclass::text, a.attname::text FROM pg_constraint c"
        " JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]"
        " WHERE c.contype = 'f' AND c.conrelid = ?::regclass"
    ),
    # Identity columns: their sequence's last value (NULL until it has handed one out).
    id_counters=(
        "SELECT table_name::text, COALESCE(pg_sequence_last_value("
        "pg_get_serial_sequence(quote_ident(table_name), 'id')::regclass), 0)"
        " FROM information_schema.columns WHERE column_name = 'id' AND is_identity = 'YES'"
        " AND table_schema = current_schema() ORDER BY table_name"
    ),
    # A sequence cannot be set to 0: 1 "not yet called" hands out 1 next.
    set_id_counter=(
        "SELECT setval(pg_get_serial_sequence(quote_ident(?1), 'id'), GREATEST(?2, 1),"
        " ?2 > 0)",
    ),
    row_key="ctid",
    contains="strpos(lower({column}), ?) > 0",
    unique_keys=("SELECT c.relname, a.attname FROM pg_index i"
                 " JOIN pg_class c ON c.oid = i.indexrelid"
                 " CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)"
                 " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum"
                 " WHERE i.indrelid = ?::regclass AND i.indisunique ORDER BY c.relname, k.n"),
    # Expression GIN indexes and foreign keys: no per-row triggers to drop, nothing to rebuild.
    bulk_prune=False,
    update_or_ignore=update_or_ignore,
    # Evaluated before any row reaches the INSERT (each row joins its one row), so ids are
    # handed out under the lock, as in a `write()` transaction.
    write_lock=f"(SELECT pg_advisory_xact_lock({WRITE_LOCK})) AS write_lock CROSS JOIN ",
)
