"""Consolidate: the episode roll-up (UMAP → HDBSCAN) on each of the person's memory-producing
channels, from the memory life cycle. Input watermark: the apex counts per channel and level,
so a person whose episodes did not change is not clustered again."""

from __future__ import annotations

from cognition.registry import BaseJob, JobContext, JobOutcome


async def run_rollup(ctx: JobContext) -> str:
    """The life cycle's roll-up over the person's channels; a one-line summary."""
    from memory.rollup import rollup_owner  # the life-cycle module

    result = await rollup_owner(ctx.services.db, ctx.services.chat, ctx.services.embedder,
                                ctx.person.id, ctx.now)
    return str(result)


class ConsolidateJob(BaseJob):
    name = "consolidate"
    description = "episode roll-up into topics and eras"

    async def inputs(self, ctx: JobContext) -> str | None:
        rows = await ctx.services.db.fetchall(
            "SELECT channel_id, level, count(*) AS n FROM episodes WHERE owner_id = ?"
            " AND parent_id IS NULL AND tombstoned_at IS NULL GROUP BY channel_id, level"
            " ORDER BY channel_id, level",
            (ctx.person.id,),
        )
        if not rows:
            return None
        return ";".join(f"{r['channel_id']}/{r['level']}:{r['n']}" for r in rows)

    async def run(self, ctx: JobContext) -> JobOutcome:
        return JobOutcome(await run_rollup(ctx))
