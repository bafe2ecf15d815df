"""The statement behind `strata.memory.store.facts.FactRepo.search`: an owner's live facts that
a query finds by vector kNN (only the owner's partition is scanned) or by the engine's keyword
search, with their raw signals, in one round trip.

Each search runs once (MATERIALIZED), as recall's episode search does
(`strata.memory.store.recall_reads.RecallReads.found_query`). A keyword hit the kNN did not
reach brings its stored vector, one point lookup by key, so its cosine is computed here as
before; the kNN's own are the engine's distances. Imports `memory` modules only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from strata.memory.engines.db import Reads, Row
from strata.memory.engines.dialect import Dialect
from strata.memory.store.episodes import as_blob


@dataclass(frozen=True, slots=True)
class FoundFacts:
    """The live facts found (rows of `facts`, ascending id) and, by fact id, the cosine of
    those that have one and the keyword score of those the keyword search found."""

    rows: list[Row]
    cosine: dict[int, float]
    bm25: dict[int, float]


def found_facts_query(dialect: Dialect, owner_id: int, embedding: npt.NDArray[np.floating] | None,
                      query: str | None, limit: int) -> tuple[str, list[object]]:
    """The statement and its parameters; ("", []) when there is neither a vector nor words.
    Columns: the fact's, then `found_distance` (kNN), `found_s` (keyword score) and
    `found_vector` (a keyword hit's vector where the kNN did not find it)."""
    parts: list[str] = []
    params: list[object] = []
    if embedding is not None:
        parts.append(f"k (id, distance) AS MATERIALIZED ({dialect.knn_sql('fact_vec', 'fact_id')})")
        params += [as_blob(embedding), owner_id, limit]
    if query is not None:
        parts.append(f"f (id, s) AS MATERIALIZED ({dialect.fact_search})")
        params += [dialect.scoped(query, owner_id, ("text", "attribute")), owner_id, limit]
    if not parts:
        return "", []
    names = [part[0] for part in parts]
    hits = " UNION ".join(f"SELECT id FROM {n}" for n in names)
    both = "k" in names and "f" in names
    # A CASE: the vector is looked up only for a keyword hit the kNN gave no distance (not
    # found, or a vector without a direction: NULL on SQLite, NaN on PostgreSQL).
    vector = ("CASE WHEN f.id IS NOT NULL AND (k.distance IS NULL OR NOT k.distance <= 2)"
              " THEN (SELECT v.embedding FROM fact_vec v WHERE v.fact_id = fa.id) END"
              if both else "NULL")
    # PostgreSQL's keyword score is a float4: as text, as a read without vectors (text
    # results) has always given it, not its exact binary value (`pg.database._binary`).
    score = "NULL" if "f" not in names else "f.s::text" if dialect.name == "postgres" else "f.s"
    sql = (f"WITH {', '.join(parts)}, hits (id) AS ({hits})"
           f" SELECT fa.*, {'k.distance' if 'k' in names else 'NULL'} AS found_distance,"
           f" {score} AS found_s, {vector} AS found_vector"
           " FROM hits JOIN facts fa ON fa.id = hits.id"
           + (" LEFT JOIN k ON k.id = fa.id" if "k" in names else "")
           + (" LEFT JOIN f ON f.id = fa.id" if "f" in names else "")
           + " WHERE fa.owner_id = ? AND fa.status = 'live' ORDER BY hits.id")
    return sql, [*params, owner_id]


async def found_facts(db: Reads, dialect: Dialect, owner_id: int,
                      embedding: npt.NDArray[np.floating] | None, query: str | None,
                      limit: int) -> FoundFacts:
    """The owner's live facts the kNN (`limit` nearest) or the keyword search (`limit` best)
    finds, with their signals. A vector stored before vectors were checked (zero or NaN)
    gives no cosine."""
    sql, params = found_facts_query(dialect, owner_id, embedding, query, limit)
    if not sql:
        return FoundFacts([], {}, {})
    rows = await db.fetchall(sql, params)
    cosine: dict[int, float] = {}
    bm25: dict[int, float] = {}
    query_vec = None if embedding is None else np.asarray(embedding, dtype=np.float32)
    for r in rows:
        fid, distance = int(r["id"]), r["found_distance"]
        if r["found_s"] is not None:
            bm25[fid] = float(r["found_s"])
        if distance is not None and math.isfinite(float(distance)):
            cosine[fid] = 1.0 - float(distance)
        elif r["found_vector"] is not None and query_vec is not None:
            sim = float(np.dot(np.frombuffer(r["found_vector"], dtype="<f4"), query_vec))
            if math.isfinite(sim):
                cosine[fid] = sim
    return FoundFacts(rows, cosine, bm25)
