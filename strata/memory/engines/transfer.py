"""Copy a whole store from one database into another: SQLite to PostgreSQL, back, or SQLite
to SQLite (`strata db copy`).

Every table that holds data is copied with its ids, in one write transaction on the
destination, so a failed copy leaves it as it was. The tables and their columns are read from
each engine's catalogue (`Dialect.data_tables` …), not listed here, so a table a later
migration adds is copied too; both stores must have the same tables and columns (the same
schema version), otherwise nothing is copied. What differs between the engines is left to
them: the keyword indexes (FTS5 tables kept by triggers on SQLite, expression indexes on
PostgreSQL) are not copied but rebuilt by the destination as the rows arrive, and vector
tables (sqlite-vec's vec0 on SQLite, pgvector columns on PostgreSQL) read and take the same
float32 blobs on both (`strata.memory.engines.pg.database`), copied owner by owner so vec0 fills
each owner's partition in order.

Order: parents before children (the foreign keys), and a column that refers to its own table
(an episode's parent, a fact's successor) is filled in by a second pass once all the table's
rows are there. The id counters are moved past the source's (which may be past the largest id
still present: ids are never reused), and the row counts are compared at the end.

Imports `strata.core.errors` and `strata.memory.engines.db`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strata.core.errors import StorageError
from strata.memory.engines.db import Database, Row

# The engine's own bookkeeping: each store keeps its own embedding dimension, creation time
# and migration history; recall's prepared tables are a cache the destination builds again.
SKIPPED = frozenset({"meta", "migrations", "recall_tables"})
BATCH = 500

Progress = Callable[[str, int, int], None]  # (table, rows copied so far, rows in the table)


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]  # the primary key's columns, in key order (empty: none)
    parents: frozenset[str]  # the other tables its foreign keys refer to
    self_refs: tuple[str, ...]  # its columns that refer to its own rows

    @property
    def vectors(self) -> bool:
        return "embedding" in self.columns and "owner_id" in self.columns


@dataclass(frozen=True, slots=True)
class TableCount:
    table: str
    source: int
    destination: int

    @property
    def ok(self) -> bool:
        return self.source == self.destination


@dataclass(frozen=True, slots=True)
class CopyReport:
    counts: tuple[TableCount, ...]
    source: str = ""  # each database as shown to people (a URL without its password)
    destination: str = ""

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.counts)

    @property
    def rows(self) -> int:
        return sum(c.destination for c in self.counts)


def _quoted(name: str) -> str:
    if not name.replace("_", "a").isalnum():  # formatted into SQL
        raise StorageError(f"unexpected table or column name {name!r}")
    return f'"{name}"'


async def _tables(db: Database) -> dict[str, Table]:
    dialect = db.dialect
    out: dict[str, Table] = {}
    for row in await db.fetchall(dialect.data_tables):
        name = str(row[0])
        if name in SKIPPED:
            continue
        columns = [(str(r[0]), int(r[1])) for r in await db.fetchall(
            dialect.table_columns, (name,))]
        links = [(str(r[0]), str(r[1])) for r in await db.fetchall(
            dialect.table_parents, (name,))]
        out[name] = Table(
            name=name,
            columns=tuple(c for c, _ in columns),
            key=tuple(c for c, pk in sorted(columns, key=lambda c: c[1]) if pk),
            parents=frozenset(p for p, _ in links if p != name),
            self_refs=tuple(sorted({c for p, c in links if p == name})))
    return out


def _ordered(tables: dict[str, Table]) -> list[Table]:
    """Parents before children (alphabetical among equals, so the order is stable)."""
    done: list[Table] = []
    placed: set[str] = set()
    while len(done) < len(tables):
        ready = [t for n, t in sorted(tables.items())
                 if n not in placed and t.parents <= placed | (t.parents - tables.keys())]
        if not ready:
            raise StorageError("the tables' foreign keys form a cycle: "
                               + ", ".join(sorted(tables.keys() - placed)))
        for t in ready:
            done.append(t)
            placed.add(t.name)
    return done


def _compatible(src: dict[str, Table], dst: dict[str, Table]) -> None:
    problems: list[str] = []
    if only := sorted(src.keys() - dst.keys()):
        problems.append("only the source has " + ", ".join(only))
    if only := sorted(dst.keys() - src.keys()):
        problems.append("only the destination has " + ", ".join(only))
    for name in sorted(src.keys() & dst.keys()):
        if set(src[name].columns) != set(dst[name].columns):
            problems.append(f"{name} has columns {sorted(src[name].columns)} in the source "
                            f"but {sorted(dst[name].columns)} in the destination")
    if problems:
        raise StorageError("the two stores' schemas differ (" + "; ".join(problems)
                           + "): run `strata db migrate` on both with this version first; "
                           "nothing was copied")


def _order_by(db: Database, table: Table) -> str:
    if table.vectors and table.key:
        return ", ".join(_quoted(c) for c in ("owner_id", *table.key))
    if table.key:
        return ", ".join(_quoted(c) for c in table.key)
    return db.dialect.insertion_order


async def count_rows(db: Database, tables: list[str]) -> dict[str, int]:
    return {t: int(await db.fetchval(f"SELECT count(*) FROM {_quoted(t)}")) for t in tables}


async def copy_store(src: Database, dst: Database, *, replace: bool = False,
                     progress: Progress | None = None, batch: int = BATCH) -> CopyReport:
    """Copy every row of `src` into `dst` (both open and migrated); the per-table counts.

    A destination holding any row is refused unless `replace`, which deletes its rows first
    (in the same transaction). Raises `StorageError` when the schemas differ.
    """
    if src.dim != dst.dim:
        raise StorageError(f"the source's embedding dimension is {src.dim} but the "
                           f"destination's is {dst.dim}: vectors cannot be copied between them")
    src_tables, dst_tables = await _tables(src), await _tables(dst)
    _compatible(src_tables, dst_tables)
    # The destination's foreign keys are the ones enforced (SQLite's vec0 tables have none).
    order = _ordered({n: t if n not in dst_tables else Table(
        t.name, t.columns, t.key, t.parents | dst_tables[n].parents,
        tuple(sorted(set(t.self_refs) | set(dst_tables[n].self_refs))))
        for n, t in src_tables.items()})
    names = [t.name for t in order]
    totals = await count_rows(src, names)
    if not replace:
        present = {t: n for t, n in (await count_rows(dst, names)).items() if n}
        if present:
            held = ", ".join(f"{t} ({n})" for t, n in sorted(present.items()))
            raise StorageError(f"the destination is not empty: {held}; copy into an empty "
                               "database, or pass --replace to delete its rows first")
    counters = {str(r[0]): int(r[1]) for r in await src.fetchall(src.dialect.id_counters)}
    dst_counters = {str(r[0]) for r in await dst.fetchall(dst.dialect.id_counters)}
    async with dst.write() as conn:
        if replace:
            for table in reversed(order):
                await conn.execute(f"DELETE FROM {_quoted(table.name)}")
        for table in order:
            try:
                await _copy_table(src, conn, table, totals[table.name], progress, batch)
            except StorageError:
                raise
            except Exception as exc:  # the driver's error, whichever engine: say where
                raise StorageError(f"copying {table.name} failed: {exc}; nothing was "
                                   "copied") from exc
        for name in sorted(dst_counters & src_tables.keys()):
            high = await _max_id(conn, name)
            value = max(counters.get(name, 0), high)
            for statement in dst.dialect.set_id_counter:
                await conn.execute(statement, (name, value))
    copied = await count_rows(dst, names)
    return CopyReport(tuple(TableCount(n, totals[n], copied[n]) for n in names),
                      f"{src.path} ({src.engine})", f"{dst.path} ({dst.engine})")


async def copy_database(src: str, dst: str, dim: int, *, replace: bool = False,
                        progress: Progress | None = None) -> CopyReport:
    """Open the store at `src` (a SQLite path or a PostgreSQL URL; only read, never
    migrated) and the one at `dst` (created or migrated at `dim`), copy, close both."""
    source = await Database.open(src, dim, read_only=True)  # not a byte of it changes
    try:
        destination = await Database.open(dst, dim)
        try:
            return await copy_store(source, destination, replace=replace, progress=progress)
        finally:
            await destination.close()
    finally:
        await source.close()


async def _max_id(conn: Any, table: str) -> int:
    cur = await conn.execute(f"SELECT COALESCE(max(id), 0) FROM {_quoted(table)}")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def _copy_table(src: Database, conn: Any, table: Table, total: int,
                      progress: Progress | None, batch: int) -> None:
    columns = table.columns
    listed = ", ".join(_quoted(c) for c in columns)
    insert = (f"INSERT INTO {_quoted(table.name)} ({listed})"
              f" VALUES ({', '.join('?' * len(columns))})")
    deferred = [columns.index(c) for c in table.self_refs]
    if deferred and len(table.key) != 1:
        raise StorageError(f"{table.name} refers to itself but has no single-column key")
    key = columns.index(table.key[0]) if deferred else -1
    later: dict[str, list[tuple[object, object]]] = {c: [] for c in table.self_refs}
    done = 0
    if progress is not None:
        progress(table.name, 0, total)
    async for rows in src.rows_in_batches(f"SELECT {listed} FROM {_quoted(table.name)}"
                                          f" ORDER BY {_order_by(src, table)}", size=batch):
        values = [_values(row, deferred, key, table, later) for row in rows]
        await conn.executemany(insert, values)
        done += len(values)
        if progress is not None:
            progress(table.name, done, total)
    for column, pairs in later.items():
        if pairs:
            await conn.executemany(
                f"UPDATE {_quoted(table.name)} SET {_quoted(column)} = ?"
                f" WHERE {_quoted(table.key[0])} = ?", pairs)


def _values(row: Row, deferred: list[int], key: int, table: Table,
            later: dict[str, list[tuple[object, object]]]) -> tuple[object, ...]:
    values = list(tuple(row))
    for i in deferred:
        if values[i] is not None:
            later[table.columns[i]].append((values[i], values[key]))
            values[i] = None
    return tuple(values)
