"""Wiring of memory: the database, one of each repository over it (`Repos`), turn-zero recall,
and the memory parts that run after a turn (row vectors, episode cut, fact extraction,
compaction) from `Settings`. Part of the composition root (`strata.app.compose`), the only
place that opens the database and builds repositories.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from strata.app.forgetting import ForgetEverywhere, console_history_folder
from strata.bot.commands import CommandRouter
from strata.bot.memory_commands import MemoryCommands
from strata.bot.memory_tools import MemoryTools
from strata.bot.metered_chat import Metered
from strata.bot.remember_command import RememberCommand
from strata.bot.tools import ToolRegistry
from strata.bot.writers.compaction import CompactionHook
from strata.bot.writers.episodes import EpisodeCutter
from strata.bot.writers.facts import ExtractAfterTurn, FactExtraction
from strata.core.config import Settings
from strata.core.ports import AfterTurn, ChatModel, Clock, ContextSource, Embedder
from strata.memory.coordination.claims import RunnerLeases
from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.engines.db import Database
from strata.memory.facts.extraction import FactExtractor
from strata.memory.facts.fact_store import FactStore
from strata.memory.lifecycle.clustering import ClusterParams
from strata.memory.lifecycle.compaction import CompactionPolicy
from strata.memory.lifecycle.episode_cut import CutSettings, EpisodeWindows
from strata.memory.lifecycle.passes import LifecyclePolicy, MemoryLifecycle
from strata.memory.lifecycle.rollup import RollupPolicy
from strata.memory.recall.facts import FactCandidates
from strata.memory.recall.search import Recall, RecallTuning
from strata.memory.store.episode_cuts import EpisodeCuts
from strata.memory.store.episodes import EpisodeRepo
from strata.memory.store.fact_reading import FactReading
from strata.memory.store.facts import FactRepo
from strata.memory.store.forgetting.forget import Forgetter
from strata.memory.store.lifecycle import LifecycleStore
from strata.memory.store.linking import LinkCodes
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.portraits import PortraitRepo
from strata.memory.store.recall_reads import RecallReads
from strata.memory.store.refusals import RefusalRepo
from strata.memory.store.row_vectors import RowIndexer
from strata.memory.store.services.agents import AgentRepo
from strata.memory.store.services.calendar import CalendarRepo
from strata.memory.store.services.connectors import ConnectorStore, MailHeaders
from strata.memory.store.services.reminders import ReminderRepo
from strata.memory.store.services.web_access import RecallLogRepo
from strata.memory.store.transcript import TranscriptRepo


def make_lifecycle_policy(settings: Settings) -> LifecyclePolicy:
    s = settings.lifecycle
    return LifecyclePolicy(
        compaction=CompactionPolicy(
            trigger_tokens=s.compact_tokens,
            keep_tokens=s.compact_keep_tokens,
            input_tokens=s.compact_input_tokens,
            use_model=s.compact_use_model,
        ),
        rollup=RollupPolicy(
            leaf_round_at=s.leaf_round_at,
            era_round_at=s.era_round_at,
            use_model=s.rollup_use_model,
            input_tokens=s.rollup_input_tokens,
            cluster=ClusterParams(
                min_cluster_size=s.min_cluster_size, random_state=s.random_state
            ),
        ),
    )


def recall_tuning(settings: Settings) -> RecallTuning:
    """Recall's knobs from the `[recall]` section."""
    return RecallTuning(**settings.recall.model_dump(
        exclude={"enabled", "hypothetical", "hypothetical_seconds", "hypothetical_always"}))


def make_recall(settings: Settings, db: Database, embedder: Embedder, clock: Clock,
                repos: Repos | None = None) -> Recall:
    """Turn-zero recall over `db` (and its `repos`) with its sources (it only reads:
    `strata memory recall` runs it on a read-only database)."""
    repos = repos or Repos.over(db)
    reads = RecallReads(db, episodes=repos.episodes, transcript=repos.transcript)
    recall = Recall(reads, embedder, clock, recall_tuning(settings))
    recall.add_source(FactCandidates(repos.facts, repos.channels))
    return recall


def cut_settings(settings: Settings) -> CutSettings:
    """Episode cutting from the `[episodes]` section."""
    e = settings.episodes
    return CutSettings(
        window_turns=e.window_turns,
        pause_minutes=e.pause_minutes,
        use_model=e.use_model,
        assistant_name=settings.bot.name,
    )


async def open_db(settings: Settings, *, read_only: bool = False) -> Database:
    """The configured database; `read_only` for the reading commands (`Database.open`)."""
    return await Database.open(settings.db.target, settings.embed.dim, read_only=read_only)


@dataclass(frozen=True)
class Repos:
    """Every repository over one database. Built here and nowhere else (the composition
    root): the rest of the code is handed the repositories it uses."""

    persons: PersonRepo
    channels: ChannelRepo
    transcript: TranscriptRepo
    episodes: EpisodeRepo
    facts: FactRepo
    runs: JobRunRepo
    reminders: ReminderRepo
    portraits: PortraitRepo
    calendar: CalendarRepo
    links: LinkCodes
    leases: RunnerLeases
    agents: AgentRepo
    connectors: ConnectorStore
    mail: MailHeaders
    refusals: RefusalRepo

    @classmethod
    def over(cls, db: Database) -> Repos:
        return cls(PersonRepo(db), ChannelRepo(db), TranscriptRepo(db), EpisodeRepo(db),
                   FactRepo(db), JobRunRepo(db), ReminderRepo(db), PortraitRepo(db),
                   CalendarRepo(db), LinkCodes(db), RunnerLeases(db), AgentRepo(db),
                   ConnectorStore(db), MailHeaders(db), RefusalRepo(db))


@dataclass(frozen=True)
class MemoryParts:
    """Memory as the turn and the jobs use it: facts, recall, forgetting, and the work after
    each turn (`after_turn`, in order)."""

    facts: FactStore
    recall: Recall
    row_indexer: RowIndexer
    cutter: EpisodeCutter
    forgetter: Forgetter
    extractor: FactExtraction
    lifecycle: MemoryLifecycle
    after_turn: list[AfterTurn]


def make_forgetter(db: Database, embedder: Embedder, repos: Repos,
                   recall_log: RecallLogRepo | None = None) -> Forgetter:
    """The forgetter of every door: memory tables, recall record and console history
    (`strata.app.forgetting`)."""
    return ForgetEverywhere(db, embedder, repos.facts, recall_log=recall_log or RecallLogRepo(db),
                            channels=repos.channels, transcript=repos.transcript,
                            history=console_history_folder())


def build_memory(settings: Settings, db: Database, repos: Repos, embedder: Embedder,
                 chat: ChatModel, clock: Clock, metered: Metered,
                 recall_log: RecallLogRepo) -> MemoryParts:
    """Turn-zero recall (episodes, transcript rows and facts) for the hot path; row vectors,
    episode cutting, fact extraction and compaction after it. `metered(purpose)` is the
    model for calls made outside a job run, charged to the memory owner."""
    facts = FactStore(repos.facts, embedder)
    row_indexer = RowIndexer(db, embedder, transcript=repos.transcript, persons=repos.persons)
    windows = EpisodeWindows(EpisodeCuts(db), embedder, cut_settings(settings), repos.transcript,
                             repos.persons)
    cutter = EpisodeCutter(windows, clock, chat, chat_for=metered("cut:turn"))
    extractor = FactExtraction(
        FactExtractor(FactReading(db), facts, repos.persons,
                      min_confidence=settings.facts.min_confidence),
        input_tokens=settings.facts.input_tokens)
    after_turn: list[AfterTurn] = [
        row_indexer,
        ExtractAfterTurn(cutter, extractor, metered("extract:turn"), clock,
                         settings.facts.max_episodes)
        if settings.facts.extract_after_turn
        else cutter,
    ]
    lifecycle = MemoryLifecycle(LifecycleStore(db, repos.episodes, repos.refusals), embedder,
                                make_lifecycle_policy(settings))
    if settings.lifecycle.compact_after_turn:
        after_turn.append(CompactionHook(lifecycle, chat, clock, lifecycle.policy.compaction,
                                         chat_for=metered("compact:turn")))
    return MemoryParts(
        facts=facts,
        recall=make_recall(settings, db, embedder, clock, repos),
        row_indexer=row_indexer,
        cutter=cutter,
        forgetter=make_forgetter(db, embedder, repos, recall_log),
        extractor=extractor,
        lifecycle=lifecycle,
        after_turn=after_turn,
    )


def register_memory_controls(commands: CommandRouter, tools: ToolRegistry, settings: Settings,
                             repos: Repos, memory: MemoryParts, clock: Clock,
                             context: ContextSource,
                             settle: Callable[[], Awaitable[None]]) -> MemoryCommands:
    """The memory tools the model may call (`facts.tools`) and /memory, /forget and friends,
    which let the after-turn work in flight settle first (`settle`)."""
    if settings.facts.tools:
        MemoryTools(memory.facts, repos.transcript, clock, repos.refusals).register(tools)
    memory_commands = MemoryCommands(
        repos.persons, repos.channels, memory.forgetter, clock, repos.transcript, repos.episodes,
        context=lambda: context, settle=settle, connectors=repos.connectors,
    )
    memory_commands.register(commands)
    RememberCommand(memory.facts, clock).register(commands)
    return memory_commands
