"""An owner's row index as one stored value (`recall_tables`), so a person's first search in a
process reads it instead of reading and splitting every row again. Pure (numpy, no SQL).

The value holds everything `OwnerRows` and its `RowTable` keep, as the index built them:
reading it back gives the same arrays bit for bit, so ranking gives the same results. Its
layout: a magic line, a JSON header naming each array (dtype, shape, offset) and the arrays'
raw bytes; no pickle, nothing is executed on reading. `format_key` names what a stored table
depends on beyond the rows (this layout, the vector size, the session gap and which sources
feed memory): a table of another key is never used.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from strata.memory.recall.owner_rows import SESSION_GAP_MINUTES, OwnerRows
from strata.memory.rules.row_table import RowTable
from strata.memory.rules.row_words import Posting
from strata.memory.store.recall_reads import source_filter

MAGIC = b"strata-recall-table\n"
LAYOUT = 1
ALIGN = 8


def format_key(dim: int) -> str:
    """What a stored table must have been built with to be used now."""
    sources = hashlib.sha256(repr(source_filter("t.source")).encode()).hexdigest()[:16]
    return f"layout={LAYOUT};dim={dim};gap={SESSION_GAP_MINUTES};sources={sources}"


def _joined(words: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """`words` as one UTF-8 array and each one's end (in characters)."""
    ends = np.cumsum([len(w) for w in words], dtype=np.int64)
    return np.frombuffer("".join(words).encode(), np.uint8), ends


def _split(blob: np.ndarray, ends: np.ndarray) -> list[str]:
    text = blob.tobytes().decode()
    starts = [0, *ends[:-1].tolist()]
    return [text[a:b] for a, b in zip(starts, ends.tolist(), strict=True)]


def pack(rows: OwnerRows) -> bytes:
    """The owner's rows and their table (built from all of them) as one value."""
    table = rows.table
    n = len(rows.ids)
    if table is None or table.n != n:
        raise ValueError("the rows' table is not built from all of them")
    stems = list(table.postings)
    postings = [table.postings[s] for s in stems]
    texts, text_ends = _joined(rows.texts)
    stem_text, stem_ends = _joined(stems)
    surface, surface_ends = _joined(sorted(rows.surface))
    arrays: dict[str, np.ndarray] = {
        "ids": table.ids, "channel": table.channel, "session": table.session,
        "minutes": table.minutes, "vectors": np.ascontiguousarray(table.vectors),
        "has_vec": table.has_vec, "prev": table.prev, "next": table.next,
        "lengths": table.lengths, "window_norm": table.window_norm, "bot": table.bot,
        "lead_in": table.lead_in, "asked_bot": table.asked_bot,
        "settled": np.asarray(rows.settled, bool), "asking": np.asarray(rows.asking, bool),
        "texts": texts, "text_ends": text_ends, "stems": stem_text, "stem_ends": stem_ends,
        "surface": surface, "surface_ends": surface_ends,
        "posting_rows": np.concatenate([p.rows for p in postings] or [np.zeros(0, np.int64)]),
        "posting_counts": np.concatenate([p.counts for p in postings] or [np.zeros(0)]),
        "posting_ends": np.cumsum([len(p) for p in postings], dtype=np.int64),
    }
    header: dict[str, Any] = {}
    parts: list[bytes] = []
    offset = 0
    for name, array in arrays.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = [array.dtype.str, list(array.shape), offset]
        pad = -len(data) % ALIGN
        parts.append(data + b"\0" * pad)
        offset += len(data) + pad
    head = json.dumps(header).encode()
    head += b" " * (-(len(MAGIC) + 8 + len(head)) % ALIGN)
    return b"".join([MAGIC, len(head).to_bytes(8, "little"), head, *parts])


def _arrays(body: bytes) -> dict[str, np.ndarray]:
    if not body.startswith(MAGIC):
        raise ValueError("not a stored recall table")
    size = int.from_bytes(body[len(MAGIC):len(MAGIC) + 8], "little")
    start = len(MAGIC) + 8 + size
    header = json.loads(body[len(MAGIC) + 8:start])
    out = {}
    for name, (dtype, shape, offset) in header.items():
        dt = np.dtype(dtype)
        count = int(np.prod(shape)) if shape else 1
        out[name] = np.frombuffer(body, dt, count, start + offset).reshape(shape)
    return out


def unpack(owner_id: int, dim: int, body: bytes) -> OwnerRows:
    """The rows and table `pack` stored (ValueError: not one, or of another vector size)."""
    a = _arrays(body)
    n = a["ids"].shape[0]
    if a["vectors"].shape != (n, dim):
        raise ValueError("a stored recall table of another vector size")
    vectors = a["vectors"].copy()  # the index writes vectors that come later into it
    postings = dict(zip(_split(a["stems"], a["stem_ends"]),
                        Posting.many(a["posting_rows"], a["posting_counts"],
                                     a["posting_ends"].tolist()), strict=True))
    surface = set(_split(a["surface"], a["surface_ends"]))
    table = RowTable(a["ids"], a["channel"], a["session"], a["minutes"], vectors[:n],
                     a["has_vec"], a["prev"], a["next"], a["lengths"], dict(postings),
                     np.vstack([vectors, np.zeros((1, dim), np.float32)]), a["window_norm"],
                     frozenset(surface), a["bot"], a["lead_in"], a["asked_bot"])
    ids = a["ids"].tolist()
    return OwnerRows(owner_id, dim, ids, a["channel"].tolist(), a["minutes"].tolist(),
                     _split(a["texts"], a["text_ends"]), postings, a["lengths"].tolist(),
                     surface, vectors, a["has_vec"].tolist(), a["settled"].tolist(),
                     a["bot"].tolist(), a["asking"].tolist(), table=table,
                     position={rid: i for i, rid in enumerate(ids)}, stored=n)
