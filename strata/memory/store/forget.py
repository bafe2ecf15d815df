"""Forgetting and wiping: what `/forget`, `/wipe` and `strata memory forget|wipe` do.

`plan_words` / `plan_fact` find what to forget in one person's memory: the matching facts
(any status), the matching turns (both sides of the conversation, with their tool rows; the
person's own turns in shared rooms included), the episodes that cite those turns or whose
summaries match, matching sentences of compaction summaries, and matching rows of any other
table registered in `strata.memory.store.export.OWNED_TABLES`. `forget(plan)` then deletes or
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
import re
from collections.abc import Iterable, Sequence
from typing import Any

from strata.core.ports import Embedder
from strata.memory.engines import backup_log
from strata.memory.engines.backup_log import KeptCopy
from strata.memory.engines.db import Database, placeholders
from strata.memory.engines.dialect import vector_deletes
from strata.memory.engines.fts import terms
from strata.memory.rules.fact_types import fact_from_db
from strata.memory.rules.text import stem_prefix
from strata.memory.store.episodes import as_blob
from strata.memory.store.export import OWNED_TABLES
from strata.memory.store.facts import FactRepo
from strata.memory.store.forget_plan import (
    EpisodeFix,
    ForgetPlan,
    WipeReport,
    matcher,
    matches,
    without_matching_sentences,
)

log = logging.getLogger(__name__)

# Tables forgetting and wiping handle themselves (the rest of OWNED_TABLES generically).
_SPECIAL = {"identities", "channels", "transcript", "episodes", "facts", "fact_sources",
            "fact_cursors", "memory_pauses"}
# What forgetting and wiping delete from or rewrite: vacuumed afterwards on PostgreSQL.
SCRUBBED_TABLES = (*(t for t, _ in OWNED_TABLES), "persons", "link_codes", "connectors",
                   "episode_rows",
                   "transcript_vec", "episode_vec", "fact_vec",
                   # A queued turn carries its message until it is answered and deleted; the
                   # deleted row's old version stays in PostgreSQL's pages until a VACUUM.
                   "turn_queue")
# Per-channel "last row handled" cursors (strata.memory.coordination.cursors).
CURSOR_TABLES = ("episode_cursors", "transcript_vec_cursors")
MAX_EXTRACTIVE_CHARS = 1200


def _chunks(ids: Iterable[Any], size: int = 500) -> Iterable[list[Any]]:
    items = list(ids)
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _extractive(lines: Sequence[tuple[str, str]]) -> str:
    """An episode summary made of what remains of its conversation."""
    text = " ".join(f"{'They' if role == 'user' else 'I'} said: {content.strip()}"
                    for role, content in lines if content.strip())
    if len(text) > MAX_EXTRACTIVE_CHARS:
        text = text[: MAX_EXTRACTIVE_CHARS - 1].rstrip() + "…"
    return text


class Forgetter:
    def __init__(self, db: Database, embedder: Embedder, facts: FactRepo) -> None:
        self.db = db
        self.embedder = embedder
        self.facts = facts

    # -- planning --------------------------------------------------------------------------------

    async def plan_words(self, person_id: int, words: str) -> ForgetPlan:
        """Everything of `person_id` that matches `words`."""
        plan = ForgetPlan(person_id, words, by_words=True)
        patterns = matcher(words)
        if not patterns:
            return plan
        rows = await self.db.fetchall("SELECT * FROM facts WHERE owner_id = ? ORDER BY id",
                                      (person_id,))
        plan.facts = [
            fact_from_db(r) for r in rows
            if matches(f"{r['text']} {r['subject']} {r['attribute']}".replace("_", " "),
                       patterns)
        ]
        # A cheap SQL prefilter (SQLite's lower() folds ASCII only, so only ASCII stems are
        # used); the regex decides.
        stems = [t for t in (stem_prefix(w) for w in terms(words)) if t.isascii()]
        contains = self.db.dialect.contains.format(column="content")
        prefilter = "".join(f" AND {contains}" for _ in stems)
        scope = await self.db.fetchall(
            "SELECT id, turn_id, kind, content FROM transcript"
            f" WHERE (owner_id = ? OR person_id = ?){prefilter} ORDER BY id",
            (person_id, person_id, *stems),
        )
        for r in scope:
            if not matches(r["content"], patterns):
                continue
            if r["kind"] == "compaction":
                plan.compactions[r["id"]] = without_matching_sentences(r["content"], patterns)
            else:
                plan.turn_ids.add(r["turn_id"])
        await self._expand(plan, patterns)
        return plan

    async def plan_since(self, person_id: int, after_row_id: int) -> ForgetPlan:
        """Every turn of `person_id` after transcript row `after_row_id` (the end of /pause)."""
        rows = await self.db.fetchall(
            "SELECT DISTINCT turn_id FROM transcript WHERE id > ? AND (owner_id = ? OR"
            " person_id = ?)",
            (after_row_id, person_id, person_id),
        )
        plan = ForgetPlan(person_id, "(paused)", turn_ids={r[0] for r in rows})
        await self._expand(plan, [])
        return plan

    async def plan_fact(self, person_id: int, fact_id: int) -> ForgetPlan | None:
        """Exactly the fact `fact_id` of `person_id`; None if not theirs. The conversation it
        came from stays (`sources_kept` says whether any of it is stored): `#ID` names one
        fact, and forgetting more than the person named would need their yes first."""
        fact = await self.facts.get(fact_id)
        if fact is None or fact.owner_id != person_id:
            return None
        sources = await self.facts.sources(fact_id)
        kept = bool(sources.row_ids) and bool(await self.db.fetchval(
            f"SELECT count(*) FROM transcript WHERE id IN ({placeholders(sources.row_ids)})",
            list(sources.row_ids)))
        return ForgetPlan(person_id, f"#{fact_id}", facts=[fact], sources_kept=kept)

    async def _expand(self, plan: ForgetPlan, patterns: Sequence[re.Pattern[str]]) -> None:
        """Rows of the planned turns, affected episodes and other tables, facts from them."""
        pid = plan.person_id
        for chunk in _chunks(plan.turn_ids):
            rows = await self.db.fetchall(
                f"SELECT id, channel_id FROM transcript WHERE turn_id IN ({placeholders(chunk)})",
                chunk,
            )
            plan.row_ids |= {r[0] for r in rows}
            plan.channels |= {r[1] for r in rows}
        # Facts whose every source row goes are forgotten with them.
        known = {f.id for f in plan.facts}
        for chunk in _chunks(plan.row_ids):
            rows = await self.db.fetchall(
                "SELECT DISTINCT fact_id FROM fact_sources"
                f" WHERE row_id IN ({placeholders(chunk)})",
                chunk,
            )
            for (fact_id,) in rows:
                if fact_id in known:
                    continue
                src = await self.facts.sources(fact_id)
                fact = await self.facts.get(fact_id)
                if fact and fact.owner_id == pid and set(src.row_ids) <= plan.row_ids:
                    plan.facts.append(fact)
                    known.add(fact_id)
        await self._plan_episodes(plan, patterns)
        if patterns:
            await self._plan_generic(plan, patterns)

    async def _plan_episodes(self, plan: ForgetPlan, patterns: Sequence[re.Pattern[str]]) -> None:
        touched: set[int] = set()
        for chunk in _chunks(plan.row_ids):
            rows = await self.db.fetchall(
                "SELECT DISTINCT episode_id FROM episode_rows"
                f" WHERE row_id IN ({placeholders(chunk)})",
                chunk,
            )
            touched |= {r[0] for r in rows}
        # Parents cite no rows (strata.memory.lifecycle.rollup): the roll-ups of a touched episode
        # are rebuilt too, so a forgotten turn does not live on in a topic or era summary.
        touched |= await self._ancestors(touched)
        if patterns:
            rows = await self.db.fetchall(
                "SELECT id, summary, key_terms FROM episodes WHERE owner_id = ?",
                (plan.person_id,),
            )
            touched |= {r["id"] for r in rows
                        if matches(r["summary"] + "\n" + r["key_terms"], patterns)}
        if not touched:
            return
        episodes = await self.db.fetchall(
            f"SELECT * FROM episodes WHERE id IN ({placeholders(list(touched))})"
            " ORDER BY level, id",
            list(touched),
        )
        rebuilt: dict[int, str | None] = {}
        for ep in episodes:
            summary = await self._rebuilt_summary(ep, plan, patterns, rebuilt)
            rebuilt[ep["id"]] = summary
            key_terms = " ".join(
                t for t in str(ep["key_terms"]).split() if not matches(t, patterns)
            ) if patterns else ep["key_terms"]
            plan.episodes.append(EpisodeFix(ep["id"], ep["owner_id"], summary, key_terms))

    async def _ancestors(self, ids: set[int]) -> set[int]:
        if not ids:
            return set()
        rows = await self.db.fetchall(
            "WITH RECURSIVE up (id) AS ("
            f" SELECT parent_id FROM episodes WHERE id IN ({placeholders(list(ids))})"
            " AND parent_id IS NOT NULL"
            " UNION SELECT e.parent_id FROM episodes e JOIN up ON e.id = up.id"
            " WHERE e.parent_id IS NOT NULL) SELECT id FROM up",
            list(ids),
        )
        return {r[0] for r in rows}

    async def _rebuilt_summary(self, ep: Any, plan: ForgetPlan,
                               patterns: Sequence[re.Pattern[str]],
                               rebuilt: dict[int, str | None]) -> str | None:
        if ep["level"] == 0:
            rows = await self.db.fetchall(
                "SELECT t.id, t.role, t.content FROM episode_rows er"
                " JOIN transcript t ON t.id = er.row_id WHERE er.episode_id = ?"
                " AND t.kind = 'message' ORDER BY t.id",
                (ep["id"],),
            )
            lines = [(r["role"], r["content"]) for r in rows
                     if r["id"] not in plan.row_ids and r["role"] in ("user", "assistant")]
            summary = _extractive(lines)
        else:
            summary = without_matching_sentences(ep["summary"], patterns) if patterns else ""
            if not summary:
                kids = await self.db.fetchall(
                    "SELECT id, summary FROM episodes WHERE parent_id = ? ORDER BY id",
                    (ep["id"],),
                )
                summary = " ".join(rebuilt.get(k["id"], k["summary"]) or "" for k in kids)
        if patterns:
            summary = without_matching_sentences(summary, patterns)
        return summary.strip() or None

    async def _plan_generic(self, plan: ForgetPlan, patterns: Sequence[re.Pattern[str]]) -> None:
        for table, column in OWNED_TABLES:
            if table in _SPECIAL:
                continue
            info = await self.db.fetchall(self.db.dialect.table_columns, (table,))
            text_cols = [str(c[0]) for c in info if "TEXT" in str(c[2])]
            if not text_cols:
                continue
            rows = await self.db.fetchall(
                f"SELECT {self.db.dialect.row_key} AS rid, {', '.join(text_cols)} FROM {table}"
                f" WHERE {column} = ?",
                (plan.person_id,),
            )
            hits = [r["rid"] for r in rows
                    if any(matches(r[c], patterns) for c in text_cols)]
            if hits:
                plan.generic[table] = hits

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
                for chunk in _chunks(rowids):
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
                if table in _SPECIAL - {"fact_sources", "fact_cursors"}:
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
        for chunk in _chunks(sorted(row_ids)):
            marks = placeholders(chunk)
            await conn.executemany(*vector_deletes("transcript_vec", "row_id", chunk))
            await conn.execute(f"DELETE FROM fact_sources WHERE row_id IN ({marks})", chunk)
            await conn.execute(f"DELETE FROM transcript WHERE id IN ({marks})", chunk)

    @staticmethod
    async def _delete_episodes(conn: Any, ids: Sequence[int]) -> None:
        for chunk in _chunks(ids):
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
