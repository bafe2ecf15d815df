"""`strata eval recall --lived`: recall measured after the memory has lived through the data set.

The static eval (`strata.evaluation.recall`) ingests every turn, then asks. Here the turns are
replayed in order with the clock at each turn's time, and between them the app's own cognition
runner (`strata.cognition.runner`, driven through `tick()` on the injected clock) does what it would
do in a running bot: a job check every `cognition.job_interval_minutes`, each job only once the
person has been idle `cognition.idle_minutes`, decay at most every `cognition.decay_hours`. The
memory life-cycle jobs run — `extract` (closes paused conversations into episodes; facts only when a
chat model is used), `consolidate` (compaction, roll-up) and `decay` (weights, tombstones,
pruning) — and the other jobs are left out. After the last turn the runner gets its idle check
too, then the questions are asked through the static eval's code, so the metrics are the same.

Checks that cannot do anything are skipped, not simulated: while the person is active every
job is held by the idle gate, and once a check ran nothing, nothing changes until the next
decay period comes round (decay's input is time itself). So the harness ticks at the first
check after the idle gate opens, again at the next check whenever a job ran, and otherwise at
the first check of the next decay period — the checks a running bot makes that change memory.

With `--episodes extractive` (the default) no chat model is asked: episodes, roll-up parents and
compaction use their extractive fallbacks and no facts are extracted; the report says so, and
counts the live episodes by the method that wrote them. Imports `bot` and `memory` only: the
runner is the app's.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.errors import StrataError
from strata.core.types import Channel, Person
from strata.evaluation.recall import EvalOptions, RecallFn, ingest_turn, recall_once, run_eval
from strata.evaluation.recall_data import EvalQuestion, EvalTurn
from strata.evaluation.recall_metrics import Answer, format_table
from strata.memory.store.episodes import EpisodeRepo

log = logging.getLogger(__name__)

# The memory life cycle; every other background job is disabled for the replay.
LIVED_JOBS = ("extract", "consolidate", "decay")
STORAGE_KEYS = ("rows_ingested", "rows_kept", "episodes_live", "facts_live", "db_bytes")


@dataclass
class LivedReplay:
    """The `ingest` step of `run_eval` for `--lived`; keeps what it saw for the report."""

    storage: dict[str, dict[str, int]] = field(default_factory=dict)
    methods: Counter[str] = field(default_factory=Counter)
    jobs: Counter[str] = field(default_factory=Counter)
    checks: int = 0

    async def __call__(self, app: App, clock: ManualClock, channel: Channel, person: Person,
                       turns: Sequence[EvalTurn]) -> dict[int, str]:
        cog = app.settings.cognition
        runner = lifecycle_runner(app)
        grid = Grid(turns[0].ts, timedelta(minutes=cog.job_interval_minutes))
        row_turn: dict[int, str] = {}
        next_check = grid.after(turns[0].ts)
        for turn in turns:
            next_check = await self._live(runner, app, clock, person, grid, next_check,
                                          turn.ts)
            row_turn[await ingest_turn(app, clock, channel, person, turn)] = turn.turn_id
            # What the chat's turn processor records for an inbound turn: the idle gate's clock.
            await app.persons.mark_active(person.id, turn.ts)
        # The person goes quiet after the last session: the runner gets its idle check.
        settle = turns[-1].ts + timedelta(minutes=cog.idle_minutes) + 2 * grid.step
        await self._live(runner, app, clock, person, grid, next_check, settle)
        self.storage[turns[0].conv] = await storage_of(app, channel, person, len(turns))
        self.methods.update(await EpisodeRepo(app.db).count_by_method(person.id))
        return row_turn

    async def _live(self, runner: Any, app: App, clock: ManualClock, person: Person,
                    grid: Grid, at: datetime, until: datetime) -> datetime:
        """Run the runner's checks from `at` until before `until`; the next check's time."""
        while at < until:
            clock.set(at)
            reports = await runner.tick()
            self.checks += 1
            ran = [r for r in reports if r.ran]
            for r in ran:
                self.jobs[f"{r.job}:{r.status}"] += 1
                if r.status == "error":
                    log.warning("lived replay: %s failed: %s", r.job, r.detail)
            at = grid.next(at) if ran else grid.after(await self._next_due(app, person, at))
        return at

    async def _next_due(self, app: App, person: Person, now: datetime) -> datetime:
        """When a check can next change memory: the idle gate opening, else the next decay
        period (a check after one that ran nothing finds nothing new until then)."""
        cog = app.settings.cognition
        fresh = await app.persons.get(person.id)
        last = fresh.last_active_at if fresh is not None else None
        if last is not None and now < last + timedelta(minutes=cog.idle_minutes):
            return last + timedelta(minutes=cog.idle_minutes)
        assert app.services is not None
        decayed = await app.services.runs.last_ok_started("decay", person.id)
        due = decayed + timedelta(hours=cog.decay_hours) if decayed else now
        return max(due, now + timedelta(microseconds=1))


@dataclass(frozen=True, slots=True)
class Grid:
    """The runner's job checks: every `step` from `start`."""

    start: datetime
    step: timedelta

    def after(self, t: datetime) -> datetime:
        """The first check at or after `t`."""
        n = -((t - self.start) // -self.step)  # ceiling division of timedeltas
        return self.start + max(n, 0) * self.step

    def next(self, t: datetime) -> datetime:
        return self.after(t + self.step)


async def storage_of(app: App, channel: Channel, person: Person, ingested: int) -> dict[str, int]:
    """What the conversation's memory holds after living through it."""
    # The ingested message rows still there (compaction rows are the summaries, not turns).
    rows = await app.transcript.count(channel_id=channel.id, messages_only=True)
    episodes = await EpisodeRepo(app.db).count(person.id)
    facts = await app.facts.repo.count_live(person.id)
    size = await app.db.bytes_on_disk()
    return {"rows_ingested": ingested, "rows_kept": int(rows), "episodes_live": int(episodes),
            "facts_live": int(facts), "db_bytes": size}


def lived_settings(settings: Settings, options: EvalOptions) -> Settings:
    """The chat model for facts and continuity summaries only when the episodes use it too."""
    model = options.episodes == "llm"
    facts = settings.facts.model_copy(update={"use_model": model})
    lifecycle = settings.lifecycle.model_copy(update={"compact_use_model": model})
    return settings.model_copy(update={"facts": facts, "lifecycle": lifecycle})


def lifecycle_runner(app: App) -> Any:
    """The app's runner class over the app's own life-cycle jobs (`LIVED_JOBS`) only."""
    runner = app.runner
    assert runner is not None
    jobs = [job for job in runner.registry if job.name in LIVED_JOBS]
    return type(runner)(runner.services, type(runner.registry)(jobs))


def modes(settings: Settings, options: EvalOptions) -> dict[str, str]:
    """How the replay's memory was written, in words, for the report."""
    if options.episodes == "llm":
        model = f"chat model {settings.llm.model} at {settings.llm.base_url}"
        return {"summaries": f"{model}; the extractive fallback wherever its answer does not "
                             "fit the schema (see episode_methods)",
                "facts": f"extracted by the {model}"}
    return {"summaries": "extractive fallbacks (no chat model asked): episodes, roll-up "
                         "parents and compaction are cut from the conversation's own text",
            "facts": "none: fact extraction needs a chat model (facts.use_model off)"}


async def run_lived_eval(
    settings: Settings, turns: Sequence[EvalTurn], questions: Sequence[EvalQuestion],
    options: EvalOptions, *, recall: RecallFn = recall_once, show_progress: bool = True,
) -> tuple[dict[str, Any], list[Answer]]:
    """The static eval's report, after living through the turns, plus `storage` and `lived`."""
    if options.consolidate:
        raise StrataError("--lived runs consolidation itself, as the background jobs do: "
                          "leave out --consolidate")
    replay = LivedReplay()
    lived = lived_settings(settings, options)
    report, answers = await run_eval(lived, turns, questions, options, recall=recall,
                                     show_progress=show_progress, ingest=replay)
    total = {k: sum(s[k] for s in replay.storage.values()) for k in STORAGE_KEYS}
    report["storage"] = {**total, "by_conversation": replay.storage}
    cog = settings.cognition
    report["lived"] = {
        **modes(settings, options),
        "jobs": list(LIVED_JOBS),
        "cadence": {"job_interval_minutes": cog.job_interval_minutes,
                    "idle_minutes": cog.idle_minutes, "decay_hours": cog.decay_hours},
        "checks": replay.checks,
        "job_runs": dict(sorted(replay.jobs.items())),
        "episode_methods": dict(sorted(replay.methods.items())),
    }
    return report, answers


def format_lived(report: dict[str, Any]) -> str:
    """The static table plus what living did and what is left."""
    st, lv = report["storage"], report["lived"]
    lines = [
        format_table(report),
        f"lived: {lv['checks']} job checks; runs {lv['job_runs']}",
        f"summaries: {lv['summaries']}",
        f"facts: {lv['facts']}",
        f"live episodes by method: {lv['episode_methods']}",
        f"storage: {st['rows_kept']} of {st['rows_ingested']} rows kept, "
        f"{st['episodes_live']} live episodes, {st['facts_live']} live facts, "
        f"{st['db_bytes']:,} bytes",
    ]
    return "\n".join(lines)
