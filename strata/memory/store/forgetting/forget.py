"""Forgetting and wiping: what `/forget`, `/wipe` and `strata memory forget|wipe` do.

`plan_words` / `plan_since` / `plan_fact` find what to forget in one person's memory
(`strata.memory.store.forgetting.forget_search`). `forget(plan)` then deletes or
rebuilds all of it in one transaction: an episode that mixed the forgotten turns with other talk is
rebuilt extractively from what remains (and re-embedded); one with nothing left is deleted.
`wipe(person)` deletes everything the person owns and then the person itself, with its
identities and channels (they carry the name and the platform ids): no row names them any more.
Their next message creates a new person, with a new id (ids are never reused).

Afterwards `scrub()` leaves no trace in the bytes of the files: on SQLite `secure_delete` is on
(see `strata.memory.engines.db`), every FTS5 index is merged (`optimize`, which drops the deleted
terms from its segments) and the WAL is checkpointed and truncated; on PostgreSQL the touched tables
are vacuumed (`Database.reclaim`; what that can and cannot promise: docs/operations.md). A word
matches when every query word starts a word of the text (case-insensitive, by stem: see
`strata.memory.rules.text.word_pattern`). Imports `bot` leaf modules and `memory` only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from strata.core.ports import Embedder
from strata.memory.engines import backup_log
from strata.memory.engines.backup_log import KeptCopy
from strata.memory.engines.db import Database, placeholders
from strata.memory.engines.dialect import vector_deletes
from strata.memory.store.episodes import as_blob
from strata.memory.store.export import OWNED_TABLES
from strata.memory.store.facts import FactRepo
from strata.memory.store.forgetting.forget_plan import (
    EpisodeFix,
    ForgetPlan,
    WipeReport,
)
from strata.memory.store.forgetting.forget_search import SPECIAL, ForgetPlanner, chunks

log = logging.getLogger(__name__)

# What forgetting and wiping delete from or rewrite: vacuumed afterwards on PostgreSQL.
SCRUBBED_TABLES = (*(t for t, _ in OWNED_TABLES), "persons", "link_codes", "connectors",
                   "episode_rows",
                   "transcript_vec", "episode_vec", "fact_vec",
                   # A queued turn carries its message until it is answered and deleted; the
                   # deleted row's old version stays in PostgreSQL's pages until a VACUUM.
                   "turn_queue")
# Per-channel "last row handled" cursors (strata.memory.coordination.cursors).
CURSOR_TABLES = ("episode_cursors", "transcript_vec_cursors")


class Forgetter(ForgetPlanner):
    """Plans (`ForgetPlanner`) and carries the plan out: deletes, rebuilds, scrubs."""

    def __init__(self, db: Database, embedder: Embedder, facts: FactRepo) -> None:
        super().__init__(db, facts)
        self.embedder = embedder

    # -- doing -----------------------------------------------------------------------------------

    async def forget(self, plan: ForgetPlan) -> None:
        """Delete and rebuild what `plan` found, in one transaction; then scrub the files."""
        if plan.empty:
            return
        vectors = await self._embed_fixes(plan.episodes)
        async with self.db.write() as conn:
            await FactRepo.delete_in(conn, [f.id for f in plan.facts])
            await self._delete_rows(conn, plan.row_ids)
            for rid, text in plan.compactions.items():
                await conn.execute("UPDATE transcript SET content = ? WHERE id = ?",
                                   (text or "(forgotten)", rid))
            await self._apply_fixes(conn, plan.episodes, vectors)
            for table, rowids in plan.generic.items():
                for chunk in chunks(rowids):
                    await conn.execute(
                        f"DELETE FROM {table} WHERE {self.db.dialect.row_key} IN"
                        f" ({placeholders(chunk)})", chunk)
            await self._fix_cursors(conn, plan.channels)
        log.info("forgot for person %s: %s", plan.person_id, plan.describe())
        await self.scrub()

    async def wipe(self, person_id: int) -> WipeReport:
        """Delete everything `person_id` owns, every turn they had in a shared room, and then
        the person row with its identities, channels and link codes (nothing names them)."""
        turns = await self.db.fetchall(
            "SELECT DISTINCT turn_id FROM transcript WHERE person_id = ? AND owner_id != ?",
            (person_id, person_id),
        )
        plan = ForgetPlan(person_id, "*", turn_ids={r[0] for r in turns})
        await self._expand(plan, [])
        own_rows = await self.db.fetchall(
            "SELECT id, channel_id FROM transcript WHERE owner_id = ?", (person_id,))
        plan.row_ids |= {r[0] for r in own_rows}
        plan.channels |= {r[1] for r in own_rows}
        # Room episodes that cited the person's turns are rebuilt; their own are deleted below.
        plan.episodes = [e for e in plan.episodes if e.owner_id != person_id]
        vectors = await self._embed_fixes(plan.episodes)
        own_eps = [r[0] for r in await self.db.fetchall(
            "SELECT id FROM episodes WHERE owner_id = ?", (person_id,))]
        fact_ids = [r[0] for r in await self.db.fetchall(
            "SELECT id FROM facts WHERE owner_id = ?", (person_id,))]
        other = 0
        async with self.db.write() as conn:
            await FactRepo.delete_in(conn, fact_ids)
            await self._delete_episodes(conn, own_eps)
            await self._delete_rows(conn, plan.row_ids)
            await self._apply_fixes(conn, plan.episodes, vectors)
            for table, column in OWNED_TABLES:
                if table in SPECIAL - {"fact_sources", "fact_cursors"}:
                    continue
                cur = await conn.execute(f"DELETE FROM {table} WHERE {column} = ?",
                                         (person_id,))
                other += max(cur.rowcount, 0)
            await self._fix_cursors(conn, plan.channels)
            # Last: the person row, its identities, channels and link codes (cascade).
            await conn.execute("DELETE FROM persons WHERE id = ? AND kind = 'person'",
                               (person_id,))
        await self.scrub()
        log.info("wiped person %s", person_id)
        return WipeReport(len(fact_ids), len(plan.row_ids), len(own_eps), other)

    async def _embed_fixes(self, fixes: Sequence[EpisodeFix]) -> list[Any]:
        """The new vectors of the episodes to rebuild, in order (before the transaction:
        the embedder is a network call)."""
        texts = [f.summary for f in fixes if f.summary is not None]
        return await self.embedder.embed(texts) if texts else []

    async def _apply_fixes(self, conn: Any, fixes: Sequence[EpisodeFix],
                           vectors: Sequence[Any]) -> None:
        """Rebuild (summary, key terms, vector) or delete each episode of `fixes`."""
        rebuilt = iter(vectors)
        for fix in fixes:
            if fix.summary is None:
                await self._delete_episodes(conn, [fix.episode_id])
                continue
            await conn.execute(
                "UPDATE episodes SET summary = ?, key_terms = ?, method = 'extractive'"
                " WHERE id = ?",
                (fix.summary, fix.key_terms, fix.episode_id),
            )
            await conn.execute("DELETE FROM episode_vec WHERE episode_id = ?", (fix.episode_id,))
            vector = next(rebuilt)
            if vector is not None:  # else found by keywords only
                await conn.execute(
                    "INSERT INTO episode_vec (episode_id, owner_id, embedding) VALUES (?, ?, ?)",
                    (fix.episode_id, fix.owner_id, as_blob(vector)),
                )

    @staticmethod
    async def _delete_rows(conn: Any, row_ids: Iterable[int]) -> None:
        for chunk in chunks(sorted(row_ids)):
            marks = placeholders(chunk)
            await conn.executemany(*vector_deletes("transcript_vec", "row_id", chunk))
            await conn.execute(f"DELETE FROM fact_sources WHERE row_id IN ({marks})", chunk)
            await conn.execute(f"DELETE FROM transcript WHERE id IN ({marks})", chunk)

    @staticmethod
    async def _delete_episodes(conn: Any, ids: Sequence[int]) -> None:
        for chunk in chunks(ids):
            marks = placeholders(chunk)
            await conn.executemany(*vector_deletes("episode_vec", "episode_id", chunk))
            await conn.execute(f"DELETE FROM fact_sources WHERE episode_id IN ({marks})", chunk)
            await conn.execute(f"UPDATE episodes SET parent_id = NULL WHERE parent_id IN"
                               f" ({marks})", chunk)
            await conn.execute(f"DELETE FROM episodes WHERE id IN ({marks})", chunk)

    @staticmethod
    async def _fix_cursors(conn: Any, channels: Iterable[int]) -> None:
        """Keep each per-channel row cursor on a row that still exists. Since migration 0010
        row ids are never reused; a database older than that may still hand out an id freed
        before the upgrade, which must then be seen as new (episode cutter, row indexer)."""
        for table in CURSOR_TABLES:
            for channel_id in channels:
                await conn.execute(
                    f"UPDATE {table} SET last_row_id = coalesce((SELECT max(id) FROM"
                    f" transcript WHERE channel_id = ?1 AND id <= {table}.last_row_id), 0)"
                    " WHERE channel_id = ?1",
                    (channel_id,),
                )

    def older_copies(self) -> list[KeptCopy]:
        """The copies Strata made of the database before now (`strata.memory.engines.
        backup_log`): they still hold what a forget deletes. None on PostgreSQL, whose
        backups are the operator's (docs/operations.md)."""
        return backup_log.copies_of(self.db.path) if self.db.engine == "sqlite" else []

    async def scrub(self) -> None:
        """Leave no deleted text where the engine can reach it (`Database.reclaim`: FTS5
        merged and the WAL truncated on SQLite, the touched tables vacuumed on PostgreSQL)."""
        await self.db.reclaim(SCRUBBED_TABLES)
