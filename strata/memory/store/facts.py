"""The data graph: typed facts about an owner, with validity, supersession and provenance.

docs/memory.md. The kind set is closed (`strata.memory.rules.fact_types.FACT_KINDS`, mirrored
by the CHECK constraint of migration 0005): a write with an unknown kind raises
`UnknownKindError` before anything is stored. A fact is live until it is superseded (a newer
fact replaced it: it was true then) or retracted (the person corrected it: it was wrong); either
way it is hidden from recall at once, loses its vector, decays fast and is purged once its
weight is negligible. A live fact fades by its kind (`strata.memory.rules.decay.FACT_DECAY`):
hidden from recall below the weight floor, purged by `decay` after the kind's grace.

`FactRepo` is the storage (callers bring embeddings); the write API the rest of the code uses is
`strata.memory.facts.fact_store.FactStore`. `FactRepo.search` is the fact
candidate source of recall: kNN over the owner's vector partition plus FTS5, with calibrated
scores in [0, 1]. Imports `bot` leaf modules and `memory` modules only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from strata.core.clock import from_iso, to_iso
from strata.memory.engines.db import Database, placeholders
from strata.memory.engines.dialect import vector_deletes
from strata.memory.rules.decay import fact_expired, fact_weight
from strata.memory.rules.fact_types import (
    LIVE,
    RETRACTED,
    SUPERSEDED,
    Fact,
    FactHit,
    NewFact,
    Sources,
    check_kind,
    check_source,
    fact_from_db,
    normalise_key,
    scored_hits,
)
from strata.memory.store.episodes import as_blob
from strata.memory.store.fact_search import found_facts

log = logging.getLogger(__name__)


# An invalid fact is purged once its (fast) decay weight falls below this: about nine days
# after it stopped being live with the 2-day τ of `strata.memory.rules.decay.SUPERSEDED_TAU_DAYS`.
PURGE_WEIGHT = 0.01


_NOT_OWN_FACTS = ("FROM facts WHERE owner_id = ? AND status = 'live' AND kind != 'reflection'"
                  " AND source != ?")


class FactRepo:
    """Storage of facts, their sources, FTS and vectors. Embeddings come from the caller."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- reads for jobs --------------------------------------------------------------------------

    async def count_live(self, owner_id: int) -> int:
        """An owner's live facts."""
        return int(await self.db.fetchval(
            "SELECT count(*) FROM facts WHERE owner_id = ? AND status = 'live'", (owner_id,)))

    async def newest_id(self, owner_id: int, *, except_source: str) -> int | None:
        """An owner's newest live fact, reflections and `except_source`'s own facts left out
        (a job's input watermark must not move on what the job itself wrote)."""
        value = await self.db.fetchval(
            f"SELECT max(id) {_NOT_OWN_FACTS}", (owner_id, except_source))
        return None if value is None else int(value)

    async def newer_than(self, owner_id: int, after_id: int, *, except_source: str,
                         limit: int) -> list[tuple[str, str]]:
        """(kind, text) of an owner's live facts after `after_id`, as `newest_id` chooses them:
        the newest `limit`, oldest first."""
        rows = await self.db.fetchall(
            f"SELECT kind, text {_NOT_OWN_FACTS} AND id > ? ORDER BY id DESC LIMIT ?",
            (owner_id, except_source, after_id, limit))
        return [(str(r["kind"]), str(r["text"])) for r in rows][::-1]

    # -- writes ----------------------------------------------------------------------------------

    async def add(
        self,
        new: NewFact,
        embedding: npt.NDArray[np.floating] | None,
        now: datetime,
        *,
        supersede: Sequence[int] = (),
        retract: Sequence[int] = (),
    ) -> int:
        """Store a live fact (with sources and vector) and, in the same transaction, supersede
        or retract the given live facts of the same owner. Unknown kind: nothing is stored.
        Without an embedding (the model gave no usable one) the fact is found by keywords."""
        check_kind(new.kind)
        check_source(new.source)
        if not new.text.strip():
            raise ValueError("a fact needs text")
        if embedding is not None and embedding.shape != (self.db.dim,):
            raise ValueError(f"embedding has shape {embedding.shape}, expected ({self.db.dim},)")
        async with self.db.write() as conn:
            cur = await conn.execute(
                "INSERT INTO facts (owner_id, kind, subject, attribute, text, confidence, source,"
                " channel_id, url, valid_from, created_at, last_relevant_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    new.owner_id,
                    new.kind,
                    normalise_key(new.subject),
                    normalise_key(new.attribute),
                    new.text.strip(),
                    min(max(new.confidence, 0.0), 1.0),
                    new.source,
                    new.channel_id,
                    new.url,
                    to_iso(new.valid_from or now),
                    to_iso(now),
                    to_iso(now),
                ),
            )
            fact_id = cur.lastrowid
            assert fact_id is not None
            if embedding is not None:
                await conn.execute(
                    "INSERT INTO fact_vec (fact_id, owner_id, embedding) VALUES (?, ?, ?)",
                    (fact_id, new.owner_id, as_blob(embedding)),
                )
            await self._add_sources(conn, fact_id, new.owner_id, new.episode_ids, new.row_ids)
            await self._invalidate(conn, new.owner_id, supersede, SUPERSEDED, now, fact_id)
            await self._invalidate(conn, new.owner_id, retract, RETRACTED, now, None)
        return fact_id

    async def add_sources(
        self, fact_id: int, owner_id: int, episode_ids: Sequence[int], row_ids: Sequence[int]
    ) -> None:
        async with self.db.write() as conn:
            await self._add_sources(conn, fact_id, owner_id, episode_ids, row_ids)

    @staticmethod
    async def _add_sources(
        conn: object, fact_id: int, owner_id: int, episode_ids: Sequence[int],
        row_ids: Sequence[int],
    ) -> None:
        rows: list[tuple[int, int, int | None, int | None]]
        rows = [(fact_id, owner_id, e, None) for e in episode_ids]
        rows += [(fact_id, owner_id, None, r) for r in row_ids]
        if rows:
            await conn.executemany(  # type: ignore[attr-defined]
                "INSERT INTO fact_sources (fact_id, owner_id, episode_id, row_id)"
                " VALUES (?, ?, ?, ?)",
                rows,
            )

    @staticmethod
    async def _invalidate(
        conn: object,
        owner_id: int,
        ids: Sequence[int],
        status: str,
        now: datetime,
        by: int | None,
    ) -> None:
        if not ids:
            return
        execute = conn.execute  # type: ignore[attr-defined]
        for fact_id in ids:
            cur = await execute(
                "UPDATE facts SET status = ?, invalid_at = ?, superseded_by = ?,"
                " last_relevant_at = ? WHERE id = ? AND owner_id = ? AND status = 'live'",
                (status, to_iso(now), by, to_iso(now), fact_id, owner_id),
            )
            if cur.rowcount:
                await execute("DELETE FROM fact_vec WHERE fact_id = ?", (fact_id,))

    async def supersede(self, owner_id: int, ids: Sequence[int], by: int, now: datetime) -> None:
        async with self.db.write() as conn:
            await self._invalidate(conn, owner_id, ids, SUPERSEDED, now, by)

    async def retract(self, owner_id: int, ids: Sequence[int], now: datetime) -> None:
        """The person said these are wrong: hidden from recall at once."""
        async with self.db.write() as conn:
            await self._invalidate(conn, owner_id, ids, RETRACTED, now, None)

    async def touch(self, ids: Sequence[int], now: datetime) -> None:
        """Facts were recalled and used: their decay clock restarts."""
        if ids:
            await self.db.executemany_write(
                "UPDATE facts SET last_relevant_at = ?, weight = 1.0 WHERE id = ?",
                [(to_iso(now), i) for i in ids],
            )

    async def delete(self, ids: Sequence[int]) -> int:
        """Hard-delete facts with their sources, FTS entries and vectors (forget, purge)."""
        if not ids:
            return 0
        async with self.db.write() as conn:
            return await self.delete_in(conn, ids)

    @staticmethod
    async def delete_in(conn: object, ids: Sequence[int]) -> int:
        """`delete` inside the caller's write transaction."""
        execute = conn.execute  # type: ignore[attr-defined]
        total = 0
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            await conn.executemany(  # type: ignore[attr-defined]
                *vector_deletes("fact_vec", "fact_id", chunk))
            cur = await execute(f"DELETE FROM facts WHERE id IN ({placeholders(chunk)})", chunk)
            total += cur.rowcount
        return total

    async def decay(self, now: datetime, owner_id: int | None = None) -> tuple[int, int]:
        """Recompute the facts' weights (of `owner_id`, or everyone's) and purge invalid facts
        that have faded and live facts whose kind's grace after fading is over
        (`strata.memory.rules.decay.FACT_DECAY`). Returns (weights updated, facts purged). For the
        decay
        job."""
        sql = "SELECT id, kind, status, last_relevant_at FROM facts"
        rows = await self.db.fetchall(
            sql + (" WHERE owner_id = ?" if owner_id is not None else ""),
            (owner_id,) if owner_id is not None else (),
        )
        updates: list[tuple[float, int]] = []
        purge: list[int] = []
        for r in rows:
            w = fact_weight(r["kind"], from_iso(r["last_relevant_at"]), now, r["status"] == LIVE)
            faded = (w < PURGE_WEIGHT if r["status"] != LIVE
                     else fact_expired(r["kind"], from_iso(r["last_relevant_at"]), now))
            if faded:
                purge.append(r["id"])
            else:
                updates.append((w, r["id"]))
        if updates:
            await self.db.executemany_write("UPDATE facts SET weight = ? WHERE id = ?", updates)
        purged = await self.delete(purge)
        return len(updates), purged

    # -- reads -----------------------------------------------------------------------------------

    async def get(self, fact_id: int) -> Fact | None:
        row = await self.db.fetchone("SELECT * FROM facts WHERE id = ?", (fact_id,))
        return fact_from_db(row) if row else None

    async def for_owner(
        self, owner_id: int, *, live_only: bool = True, kinds: Iterable[str] | None = None
    ) -> list[Fact]:
        sql = "SELECT * FROM facts WHERE owner_id = ?"
        params: list[object] = [owner_id]
        if live_only:
            sql += " AND status = 'live'"
        if kinds is not None:
            wanted = [check_kind(k) for k in kinds]
            sql += f" AND kind IN ({placeholders(wanted)})"
            params += wanted
        rows = await self.db.fetchall(sql + " ORDER BY id", params)
        return [fact_from_db(r) for r in rows]

    async def sources(self, fact_id: int) -> Sources:
        rows = await self.db.fetchall(
            "SELECT episode_id, row_id FROM fact_sources WHERE fact_id = ?"
            f" ORDER BY {self.db.dialect.insertion_order}",
            (fact_id,),
        )
        return Sources(
            tuple(r[0] for r in rows if r[0] is not None),
            tuple(r[1] for r in rows if r[1] is not None),
        )

    async def count(self, owner_id: int, *, live_only: bool = True) -> int:
        sql = "SELECT count(*) FROM facts WHERE owner_id = ?"
        if live_only:
            sql += " AND status = 'live'"
        return int(await self.db.fetchval(sql, (owner_id,)))

    async def search(
        self,
        owner_id: int,
        text: str,
        embedding: npt.NDArray[np.floating] | None,
        *,
        limit: int = 20,
        match: str | None = None,
    ) -> list[FactHit]:
        """Live facts of `owner_id` for a query: vector kNN (only the owner's partition is
        scanned) and FTS5 side by side in one statement (`strata.memory.store.fact_search`),
        merged, best first by calibrated relevance.

        Every hit carries its raw signals too: `cosine` (keyword hits are compared with the
        query through their stored vector) and `bm25` (None when FTS did not find it).
        `match` overrides the FTS expression built from `text`."""
        query = match if match is not None else self.db.dialect.keyword_query(text)
        found = await found_facts(self.db, self.db.dialect, owner_id, embedding, query, limit)
        hits = scored_hits([fact_from_db(row) for row in found.rows], text, found.cosine,
                           found.bm25)
        return hits[:limit]

