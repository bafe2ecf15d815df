"""What a forget will touch, found before anything is deleted (`ForgetPlanner`): the matching
facts, turns (with their tool rows), the episodes that cite them or whose summaries match (and the
roll-ups above them, rebuilt), matching sentences of compaction summaries and matching rows of
the other tables in `strata.memory.store.export.OWNED_TABLES`;
`strata.memory.store.forgetting.forget` carries the plan out. Imports `bot` leaf modules and
`memory` only.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

from strata.core.words import terms
from strata.memory.engines.db import Database, placeholders
from strata.memory.rules.fact_types import fact_from_db
from strata.memory.rules.text import stem_prefix
from strata.memory.store.export import OWNED_TABLES
from strata.memory.store.facts import FactRepo
from strata.memory.store.forgetting.forget_plan import (
    EpisodeFix,
    ForgetPlan,
    matcher,
    matches,
    without_matching_sentences,
)

log = logging.getLogger(__name__)

# Tables forgetting and wiping handle themselves (the rest of OWNED_TABLES generically).
SPECIAL = {"identities", "channels", "transcript", "episodes", "facts", "fact_sources",
           "fact_cursors", "memory_pauses"}
MAX_EXTRACTIVE_CHARS = 1200


def chunks(ids: Iterable[Any], size: int = 500) -> Iterable[list[Any]]:
    """`ids` in lists of at most `size` (one statement's worth of parameters)."""
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


class ForgetPlanner:
    """Reads only: what `plan_*` finds is deleted by
    `strata.memory.store.forgetting.forget.Forgetter`."""

    def __init__(self, db: Database, facts: FactRepo) -> None:
        self.db = db
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
        for chunk in chunks(plan.turn_ids):
            rows = await self.db.fetchall(
                f"SELECT id, channel_id FROM transcript WHERE turn_id IN ({placeholders(chunk)})",
                chunk,
            )
            plan.row_ids |= {r[0] for r in rows}
            plan.channels |= {r[1] for r in rows}
        # Facts whose every source row goes are forgotten with them.
        known = {f.id for f in plan.facts}
        for chunk in chunks(plan.row_ids):
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
        for chunk in chunks(plan.row_ids):
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
            if table in SPECIAL:
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
