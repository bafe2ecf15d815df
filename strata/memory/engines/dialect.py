"""What differs between the storage engines: the statements that cannot be written once.

Repositories write portable SQL (`?` marks, `ON CONFLICT` upserts, `IS NOT DISTINCT FROM`,
`TRUE`, aggregates with `FILTER`), which SQLite runs as it is and the PostgreSQL engine after
translating the marks (`strata.memory.engines.pg.sql`). Keyword and vector search cannot be
portable: FTS5
`MATCH` with `bm25()` and sqlite-vec's kNN on one side, `tsvector` with `ts_rank_cd()` and
pgvector's `<=>` on the other. Those statements come from `db.dialect`, one `Dialect` per
engine, each statement taking the same parameters in the same order on both engines.
SQLite's is here; PostgreSQL's is `strata.memory.engines.pg.dialect.POSTGRES`. Imports
`strata.memory.engines.fts` only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from strata.memory.engines.fts import match_query, owner_scoped, porter_stem


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    # The bound keyword-query parameter for `text` (None: no words, search nothing).
    keyword_query: Callable[[str], str | None]
    # The term the keyword index stores for one lower-cased word: what its stemmer makes of it.
    stem: Callable[[str], str]
    # A keyword query limited to one owner's rows and to some columns, for the owner-scoped
    # searches below: (query, owner_id, columns) -> the bound parameter.
    scoped: Callable[[str, int, tuple[str, ...]], str]
    # One owner's message rows matching a keyword query: `t.*` and `score`, best first;
    # lower scores are better (SQLite's bm25 is negative). Params: (query, owner_id, limit).
    transcript_search: str
    # An owner's `k` nearest vectors in a vector table: (key, distance), distance being
    # 1 - cosine. Formatted with {table} and {key}; params: (vector blob, owner_id, k).
    knn: str
    # The stored vectors of some keys of a vector table: (key, embedding). Formatted with
    # {table} and {key}; params: (the keys as a JSON array,): `vectors_query` builds both.
    # Not `key IN (…)`: sqlite-vec answers that by scanning every owner's keys, a second per
    # thousand keys in a store of half a million rows, where a join from the list makes one
    # point lookup per key.
    vectors: str
    # One owner's live facts matching a scoped keyword query (text and attribute): (id, s),
    # best (lowest) first. Params: (scoped query, owner_id, limit).
    fact_search: str
    # One owner's live episodes matching a scoped keyword query (summary and key terms),
    # ranking only the newest `scan` matches: (id, s), best first.
    # Params: (scoped query, scan, owner_id, k).
    episode_search: str
    # The column that orders rows as they were inserted (a table without an id).
    insertion_order: str
    # What `strata.memory.engines.transfer`, `/link` and `/forget` need to know of a store's schema,
    # which each engine keeps in its own catalogue. The tables that hold data (vector tables
    # included;
    # keyword indexes, their shadow tables and the engine's own bookkeeping left out):
    # (name, 1 where a row's owner cannot be updated in place, a sqlite-vec table whose
    # partition key it is, else 0). No params.
    data_tables: str
    # A table's columns in order: (name, position in the primary key or 0, declared type,
    # upper case). Params: (table,).
    table_columns: str
    # A table's foreign keys: (parent table, column). Params: (table,).
    table_parents: str
    # The tables whose `id` comes from a counter that never hands out an id twice, with the
    # largest id it has handed out: (table, high). No params.
    id_counters: str
    # Statements that move a table's counter to a value: params (table, value) as ?1, ?2.
    set_id_counter: tuple[str, ...]
    # The hidden column that names one row of any table, for a read-then-delete of rows
    # found by their contents (a table without an id); stable while the row is not updated.
    row_key: str
    # A condition: text column `{column}` (lower-cased) contains the bound parameter.
    # Formatted with {column}; params: (needle,).
    contains: str
    # A table's unique keys, one row per (key, column): (key name, column). Params: (table,).
    unique_keys: str
    # Whether pruning has a bulk path (per-row FTS/vector triggers to drop, FTS indexes to
    # rebuild, `strata.memory.store.forgetting.prune`); without it pruning always deletes in
    # batches.
    bulk_prune: bool
    # `UPDATE {table} SET {column} = ? WHERE {column} = ?` that leaves a row as it is where
    # the new value would collide with a unique key: (table, column, the table's unique keys
    # containing `column`, each its column names) -> SQL. Params: (new, old).
    update_or_ignore: Callable[[str, str, list[tuple[str, ...]]], str]
    # For a write that is one statement and its own transaction (`Database.write_statement`):
    # a FROM item, joined before the statement's own, that takes the write lock every write
    # transaction takes first (empty where the statement takes it by writing).
    write_lock: str = ""

    def knn_sql(self, table: str, key: str) -> str:
        return _vector_table(self.knn, table, key)

    def vectors_query(self, table: str, key: str,
                      keys: Iterable[int]) -> tuple[str, tuple[str]]:
        """The statement reading `keys`' vectors from a vector table, and its parameters."""
        return _vector_table(self.vectors, table, key), (json.dumps([int(k) for k in keys]),)


def vector_deletes(table: str, key: str, keys: Iterable[int]) -> tuple[str, list[tuple[int]]]:
    """Deleting `keys`' vectors from a vector table, for `executemany`: one key at a time, on
    both engines, because sqlite-vec answers `key IN (…)` by scanning every owner's keys
    (about 250 ms for 500 keys among 400,000 vectors, against 7 ms one by one)."""
    return (_vector_table("DELETE FROM {table} WHERE {key} = ?", table, key),
            [(int(k),) for k in keys])


def _vector_table(sql: str, table: str, key: str) -> str:
    if not (table.isidentifier() and key.isidentifier()):  # formatted into SQL
        raise ValueError(f"bad vector table {table!r} or key {key!r}")
    return sql.format(table=table, key=key)


SQLITE = Dialect(
    name="sqlite",
    keyword_query=match_query,
    stem=porter_stem,
    transcript_search=(
        "SELECT t.*, bm25(transcript_fts) AS score FROM transcript_fts"
        " JOIN transcript t ON t.id = transcript_fts.rowid"
        " WHERE transcript_fts MATCH ? AND t.owner_id = ? AND t.kind = 'message'"
        " ORDER BY score LIMIT ?"
    ),
    knn="SELECT {key}, distance FROM {table} WHERE embedding MATCH ? AND owner_id = ? AND k = ?",
    vectors=("SELECT v.{key}, v.embedding FROM json_each(?) AS j"
             " CROSS JOIN {table} AS v ON v.{key} = j.value"),
    scoped=owner_scoped,
    # The owner column weighs nothing in bm25; CROSS JOIN keeps MATCH run once.
    fact_search=(
        "SELECT f.id, bm25(fact_fts, 0.0, 1.0, 1.0) AS s FROM fact_fts"
        " CROSS JOIN facts f ON f.id = fact_fts.rowid"
        " WHERE fact_fts MATCH ? AND f.owner_id = ? AND f.status = 'live'"
        " ORDER BY s LIMIT ?"
    ),
    # bm25 costs a read of every match's position lists: only the newest `scan` matches
    # are ranked (all of them unless the query's words are very common). The CROSS JOIN
    # keeps the planner from running the MATCH once per episode row.
    episode_search=(
        "SELECT e.id, f.s FROM (SELECT rowid AS id,"
        " bm25(episode_owner_fts, 0.0, 1.0, 1.0) AS s FROM episode_owner_fts"
        " WHERE episode_owner_fts MATCH ? ORDER BY rowid DESC LIMIT ?) AS f"
        " CROSS JOIN episodes e ON e.id = f.id"
        " WHERE e.owner_id = ? AND e.tombstoned_at IS NULL ORDER BY f.s LIMIT ?"
    ),
    insertion_order="rowid",
    # A vec0 table is a virtual table that holds data; its `_vector_chunksNN` tables are
    # listed as plain tables but are its storage, like the `shadow` ones.
    data_tables=(
        "SELECT t.name, t.type = 'virtual' FROM pragma_table_list t WHERE t.schema = 'main'"
        " AND t.name NOT LIKE 'sqlite%'"
        " AND (t.type = 'table' OR (t.type = 'virtual' AND EXISTS (SELECT 1 FROM sqlite_schema s"
        "  WHERE s.name = t.name AND s.sql LIKE '%USING vec0%')))"
        " AND NOT EXISTS (SELECT 1 FROM sqlite_schema v WHERE v.sql LIKE 'CREATE VIRTUAL TABLE%'"
        "  AND t.name GLOB v.name || '_vector_chunks[0-9]*')"
        " ORDER BY t.name"
    ),
    table_columns="SELECT name, pk, upper(type) FROM pragma_table_info(?) ORDER BY cid",
    table_parents='SELECT "table", "from" FROM pragma_foreign_key_list(?)',
    id_counters=(
        "SELECT s.name, COALESCE(q.seq, 0) FROM sqlite_schema s"
        " LEFT JOIN sqlite_sequence q ON q.name = s.name"
        " WHERE s.type = 'table' AND s.sql LIKE '%AUTOINCREMENT%' ORDER BY s.name"
    ),
    set_id_counter=(
        "UPDATE sqlite_sequence SET seq = ?2 WHERE name = ?1",
        "INSERT INTO sqlite_sequence (name, seq) SELECT ?1, ?2"
        " WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?1)",
    ),
    row_key="rowid",
    contains="instr(lower({column}), ?) > 0",
    unique_keys=("SELECT l.name, i.name FROM pragma_index_list(?1) l,"
                 " pragma_index_info(l.name) i WHERE l.\"unique\" ORDER BY l.name, i.seqno"),
    bulk_prune=True,
    update_or_ignore=lambda table, column, keys: (
        f'UPDATE OR IGNORE "{table}" SET "{column}" = ? WHERE "{column}" = ?'),
)
