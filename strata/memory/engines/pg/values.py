"""How values cross between Strata and PostgreSQL: psycopg's row type and its type adapters.

`row_factory` makes rows index by position and by column name, like `sqlite3.Row`.
`configure` (run on every pooled connection) registers the adapters: a `bytes` parameter
(a little-endian float32 blob, SQLite's vector format) is sent as pgvector's `vector`, and a
`vector` reads back as such a blob, from text or binary results; `numeric` (what `sum()` of
integers returns) reads as an int or a float, never a `Decimal`; text is NUL-escaped on the way
in and unescaped on the way out (PostgreSQL's text cannot hold NUL). Imports
`strata.core.errors`, numpy and psycopg.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np
from psycopg import AsyncConnection, AsyncCursor
from psycopg.abc import AdaptContext
from psycopg.adapt import Buffer, Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo
from psycopg.types.numeric import NumericBinaryLoader

from strata.core.errors import StorageError


class PgRow(tuple[Any, ...]):
    """A row indexed by position or by column name, like `sqlite3.Row`."""

    _names: ClassVar[dict[str, int]] = {}

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def row_factory(cursor: AsyncCursor[Any]) -> Any:
    names: dict[str, int] = {}
    for i, column in enumerate(cursor.description or ()):
        names.setdefault(column.name, i)  # a repeated name means its first column, as SQLite
    row_type = type("PgRow", (PgRow,), {"_names": names})
    return row_type


class _BlobVectorDumper(Dumper):
    """A float32 blob (SQLite's vector format) as pgvector's binary `vector`."""

    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer:
        values = np.frombuffer(bytes(obj), dtype="<f4")
        return (len(values).to_bytes(2, "big") + b"\x00\x00"
                + values.astype(">f4").tobytes())


class _VectorBlobLoader(Loader):
    """pgvector's text output (`[0.1,0.2]`) as a little-endian float32 blob."""

    def load(self, data: Buffer) -> bytes:
        text = bytes(data)[1:-1]
        values = np.array(text.split(b","), dtype=np.float32) if text else np.zeros(0, "<f4")
        return values.astype("<f4").tobytes()


class _VectorBinaryLoader(Loader):
    """pgvector's binary output (dimension, a reserved word, big-endian float32 values) as a
    little-endian float32 blob."""

    format = Format.BINARY

    def load(self, data: Buffer) -> bytes:
        return np.frombuffer(bytes(data), dtype=">f4", offset=4).astype("<f4").tobytes()


class _NumberBinaryLoader(Loader):
    """`numeric` in binary results: as `_NumberLoader` does for text, never a Decimal."""

    format = Format.BINARY

    def __init__(self, oid: int, context: AdaptContext | None = None) -> None:
        super().__init__(oid, context)
        self._decimal = NumericBinaryLoader(oid, context)

    def load(self, data: Buffer) -> int | float:
        value = self._decimal.load(data)
        if value.is_finite() and int(value.as_tuple().exponent) >= 0:
            return int(value)
        return float(value)


class _NumberLoader(Loader):
    """`numeric` as int when whole (a `sum()` of integers), else float: never a Decimal."""

    def load(self, data: Buffer) -> int | float:
        text = bytes(data)
        return float(text) if (b"." in text or b"e" in text.lower() or b"N" in text) \
            else int(text)


# PostgreSQL's text cannot hold NUL, which SQLite stores and a chat message may contain:
# NUL is written as MARK + "0" and MARK itself (a noncharacter, never meant for interchange)
# as MARK + MARK, and read back, so every text is stored and returned exactly.
MARK = "\U0010ffff"
_ESCAPED = re.compile(MARK + "(.)", re.DOTALL)


def escape_nul(text: str) -> str:
    if MARK in text:
        text = text.replace(MARK, MARK + MARK)
    return text.replace("\x00", MARK + "0") if "\x00" in text else text


def unescape_nul(text: str) -> str:
    if MARK not in text:
        return text
    return _ESCAPED.sub(lambda m: "\x00" if m.group(1) == "0" else MARK, text)


class _StrDumper(Dumper):
    """A `str` as psycopg sends it (untyped text, so PostgreSQL infers the type), escaped."""

    oid = 0

    def dump(self, obj: Any) -> Buffer:
        return escape_nul(str(obj)).encode()


class _TextLoader(Loader):
    def load(self, data: Buffer) -> str:
        return unescape_nul(bytes(data).decode())


class _TextBinaryLoader(_TextLoader):
    """Text in binary results (reads naming `embedding`): the same UTF-8 bytes."""

    format = Format.BINARY


async def configure(conn: AsyncConnection[Any]) -> None:
    info = await TypeInfo.fetch(conn, "vector")
    if info is None:
        raise StorageError("the database has no pgvector type: run the migrations first")
    dumper = type("BlobVectorDumper", (_BlobVectorDumper,), {"oid": info.oid})
    conn.adapters.register_dumper(bytes, dumper)
    conn.adapters.register_loader(info.oid, _VectorBlobLoader)
    conn.adapters.register_loader("numeric", _NumberLoader)
    if conn.info.encoding != "utf-8":
        raise StorageError(f"the connection's encoding is {conn.info.encoding}, not UTF-8")
    conn.adapters.register_dumper(str, _StrDumper)
    for name in ("text", "varchar", "bpchar", "name"):
        conn.adapters.register_loader(name, _TextLoader)
        conn.adapters.register_loader(name, _TextBinaryLoader)
    conn.adapters.register_loader(info.oid, _VectorBinaryLoader)
    conn.adapters.register_loader("numeric", _NumberBinaryLoader)
