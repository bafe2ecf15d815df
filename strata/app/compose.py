"""The composition root: builds the database, model clients, repositories and the turn
processor from `Settings`, and owns their lifetimes. The only module (with `strata.app.cli`) that
may import `adapters` and `cognition`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from strata.app.agent_memory import AgentMemory
from strata.app.web.command import WebCommand
from strata.app.web.links import WebLinks
from strata.app.web.metrics import Metrics, TimedChat
from strata.app.web.recall_log import ForgetClearsRecall, RecordingRecaller
from strata.bot.commands import CommandRouter
from strata.bot.context_window import fitted_settings, model_window
from strata.bot.link import LinkCommand
from strata.bot.llm import OpenAIChatModel, OpenAIEmbedder
from strata.bot.memory_commands import MemoryCommands
from strata.bot.memory_tools import MemoryTools
from strata.bot.metered_chat import MeteredChat
from strata.bot.outbound import Outbound
from strata.bot.shared_inbox import SharedInbox
from strata.bot.turns import ChannelTurns, ToolRegistry, TurnProcessor
from strata.cognition.ambient import AmbientContext
from strata.cognition.connector_secrets import SecretBox, key_path
from strata.cognition.connectors import configured_connectors
from strata.cognition.personal_connectors import (
    ConnectorCommands,
    connector_reader,
    personal_connectors,
)
from strata.cognition.registry import default_registry
from strata.cognition.reminders import ReminderPorts, register_commands, register_tools
from strata.cognition.research import configured_search
from strata.cognition.research import register_commands as register_research_commands
from strata.cognition.runner import Runner
from strata.cognition.services import Services
from strata.core.clock import FileClock, SystemClock
from strata.core.config import Settings
from strata.core.errors import ConfigError
from strata.core.ports import Adapter, AfterTurn, ChatModel, Clock, Embedder
from strata.core.types import Channel, Person
from strata.memory.coordination.claims import RunnerLeases
from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.coordination.leases import Leases
from strata.memory.coordination.turn_queue import TurnQueue
from strata.memory.domain.agents import AgentRepo
from strata.memory.domain.calendar import CalendarRepo
from strata.memory.domain.clustering import ClusterParams
from strata.memory.domain.compaction import CompactionHook, CompactionPolicy
from strata.memory.domain.connectors import ConnectorStore, MailHeaders
from strata.memory.domain.episode_cut import CutSettings, EpisodeCutter
from strata.memory.domain.episodes import EpisodeRepo
from strata.memory.domain.fact_extraction import FactExtractor, model_completer
from strata.memory.domain.fact_recall import FactCandidates
from strata.memory.domain.facts import FactRepo, FactStore
from strata.memory.domain.forget import Forgetter
from strata.memory.domain.lifecycle import LifecyclePolicy, MemoryLifecycle
from strata.memory.domain.linking import LinkCodes
from strata.memory.domain.persons import ChannelRepo, PersonRepo
from strata.memory.domain.portraits import PortraitRepo
from strata.memory.domain.recall import Recall, RecallTuning
from strata.memory.domain.reminders import ReminderRepo
from strata.memory.domain.rollup import RollupPolicy
from strata.memory.domain.row_vectors import RowIndexer
from strata.memory.domain.transcript import TranscriptRepo
from strata.memory.domain.web_access import RecallLogRepo, WebTokens
from strata.memory.engines.db import Database

if TYPE_CHECKING:
    from strata.app.web.server import WebServer

log = logging.getLogger(__name__)


def default_clock(settings: Settings) -> Clock:
    """The system clock; `bot.clock_file` (a simulation aid) makes it a shared file's time."""
    if settings.bot.clock_file:
        try:
            return FileClock(settings.bot.clock_file)
        except ValueError as exc:
            raise ConfigError(f"config key bot.clock_file (or STRATA_BOT_CLOCK_FILE): {exc}"
                              ) from exc
    return SystemClock()


def make_chat_model(settings: Settings) -> OpenAIChatModel:
    s = settings.llm
    return OpenAIChatModel(
        base_url=s.base_url,
        model=s.model,
        api_key=s.api_key,
        timeout=s.timeout,
        max_retries=s.max_retries,
        backoff=s.retry_backoff,
        max_tokens=s.max_tokens,
    )


def make_embedder(settings: Settings) -> OpenAIEmbedder:
    s = settings.embed
    return OpenAIEmbedder(
        base_url=s.base_url,
        model=s.model,
        dim=s.dim,
        api_key=s.api_key,
        timeout=s.timeout,
        max_retries=s.max_retries,
        backoff=settings.llm.retry_backoff,
        batch_size=s.batch_size,
    )


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
    return RecallTuning(**settings.recall.model_dump(exclude={"enabled"}))


def make_recall(settings: Settings, db: Database, embedder: Embedder, clock: Clock) -> Recall:
    """Turn-zero recall over `db` with its sources (it only reads: `strata memory recall`
    runs it on a read-only database)."""
    repos = Repos.over(db)
    recall = Recall(db, embedder, clock, recall_tuning(settings))
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


# A platform's command menu: (name, summary) of each chat command (`CommandRouter.menu`).
Menu = Sequence[tuple[str, str]]


def build_matrix_adapter(
    settings: Settings, clock: Clock | None = None, commands: Menu = ()
) -> Adapter | None:
    """The Matrix adapter when `matrix.homeserver`, `matrix.user` and a password or access
    token are configured (STRATA_MATRIX_*), else None."""
    m = settings.matrix
    if not (m.homeserver and m.user and (m.password or m.access_token)):
        return None
    from strata.adapters.matrix.adapter import MatrixAdapter  # nio is an optional extra

    return MatrixAdapter(
        m, access=settings.access, bot_name=settings.bot.name, stream=settings.bot.stream
    )


def build_discord_adapter(
    settings: Settings, clock: Clock | None = None, commands: Menu = ()
) -> Adapter | None:
    """The Discord adapter when `discord.token` (STRATA_DISCORD_TOKEN) is set, else None."""
    if not settings.discord.token:
        return None
    from strata.adapters.discord.adapter import build_discord_adapter as build  # an optional extra

    return build(settings, clock, commands=commands)


def build_telegram_adapter(
    settings: Settings, clock: Clock | None = None, commands: Menu = ()
) -> Adapter | None:
    """The Telegram adapter when `telegram.token` (STRATA_TELEGRAM_TOKEN) is set, else None."""
    if not settings.telegram.token:
        return None  # python-telegram-bot is an optional extra: not imported unless configured
    from strata.adapters.telegram.adapter import build_telegram_adapter as build

    return build(settings, clock, commands=commands)


# A platform adapter factory: the adapter when its credentials are configured, else None.
AdapterFactory = Callable[[Settings, Clock, Menu], Adapter | None]

# The platform adapters `strata run` starts when configured (the console adapter is started by
# `strata run --console`).
ADAPTER_FACTORIES: list[AdapterFactory] = [
    build_discord_adapter,
    build_matrix_adapter,
    build_telegram_adapter,
]


def configured_adapters(settings: Settings, clock: Clock, commands: Menu = ()) -> list[Adapter]:
    """Every platform adapter whose credentials are set, ready to start; `commands` is the
    command menu they offer (`App.commands.menu()`)."""
    adapters = []
    for factory in ADAPTER_FACTORIES:
        adapter = factory(settings, clock, commands)
        if adapter is not None:
            adapters.append(adapter)
    return adapters


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

    @classmethod
    def over(cls, db: Database) -> Repos:
        return cls(PersonRepo(db), ChannelRepo(db), TranscriptRepo(db), EpisodeRepo(db),
                   FactRepo(db), JobRunRepo(db), ReminderRepo(db), PortraitRepo(db),
                   CalendarRepo(db), LinkCodes(db), RunnerLeases(db), AgentRepo(db),
                   ConnectorStore(db), MailHeaders(db))


def metered_for_owner(chat: ChatModel, runs: JobRunRepo, clock: Clock,
                      purpose: str, metrics: Metrics | None = None) -> Callable[[int], ChatModel]:
    """The model for calls made after a turn, outside any job run: each call's tokens are
    recorded for the memory owner under `purpose` (shown by `strata jobs status`)."""

    def for_owner(owner_id: int) -> ChatModel:
        async def charge(tokens: int) -> None:
            if metrics is not None:
                metrics.charge(purpose, tokens)
            await runs.record_usage(purpose, owner_id, clock.now(), tokens)

        return MeteredChat(chat, charge)

    return for_owner


@dataclass
class ExtractAfterTurn:
    """After-turn hook (`facts.extract_after_turn`): run `before` (the episode cutter), then
    read the owner's new episodes into facts, so a cut episode is read in the same turn."""

    before: AfterTurn
    extractor: FactExtractor
    chat_for: Callable[[int], ChatModel]
    clock: Clock
    max_episodes: int

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        await self.before(channel, person, turn_id)
        if channel.owner_id != person.id or await self.extractor.watermark(person.id) is None:
            return
        await self.extractor.run(
            person.id, model_completer(self.chat_for(person.id)), self.clock.now(),
            max_episodes=self.max_episodes,
        )


@dataclass
class App:
    settings: Settings
    db: Database
    clock: Clock
    chat: OpenAIChatModel
    embedder: OpenAIEmbedder
    persons: PersonRepo
    channels: ChannelRepo
    transcript: TranscriptRepo
    processor: TurnProcessor
    facts: FactStore
    extractor: FactExtractor
    forgetter: Forgetter
    commands: CommandRouter = field(default_factory=CommandRouter)
    episodes: EpisodeRepo | None = None
    recall: Recall | None = None
    cutter: EpisodeCutter | None = None
    row_indexer: RowIndexer | None = None
    outbound: Outbound = field(default_factory=Outbound)
    services: Services | None = None
    runner: Runner | None = None
    repos: Repos | None = None
    # What the adapters are handed: the processor, plus the database's turn queue and leases
    # so that several processes can share a platform account (`strata.bot.shared_inbox`).
    inbox: SharedInbox | None = None
    # What external agents may do with their person's memory (`strata mcp`).
    agents: AgentMemory | None = None
    # The web view's parts (strata.app.web): its links and sessions, what recall showed the model,
    # the operators' metrics, and the commands its buttons run.
    metrics: Metrics = field(default_factory=Metrics)
    web_links: WebLinks | None = None
    web_command: WebCommand | None = None
    recall_log: RecallLogRepo | None = None
    memory_commands: MemoryCommands | None = None

    @classmethod
    async def create(cls, settings: Settings, clock: Clock | None = None) -> App:
        """Everything wired once, in dependency order: each part gets the repositories and
        ports it uses when it is built, and nothing is patched in afterwards."""
        clock = clock or default_clock(settings)
        # A small window (a local model's) bounds every prompt and background call's input.
        window = await model_window(settings)
        if window is not None:
            settings = fitted_settings(settings, window)
        db = await open_db(settings)
        metrics = Metrics()
        chat = make_chat_model(settings)
        timed_chat = TimedChat(chat, metrics)
        embedder = make_embedder(settings)
        repos = Repos.over(db)
        commands, tools = CommandRouter(), ToolRegistry()
        LinkCommand(repos.links, repos.persons, clock).register(commands)
        web_links = WebLinks(WebTokens(db), clock, timedelta(minutes=settings.web.link_minutes),
                             timedelta(minutes=settings.web.session_minutes))
        web_command = WebCommand(web_links, settings.web.public_url, settings.web.enabled)
        web_command.register(commands)
        recall_log = RecallLogRepo(db)
        facts = FactStore(repos.facts, embedder)
        # Memory: turn-zero recall (episodes, transcript rows and facts) on the hot path; row
        # vectors and episode cutting after it.
        # Model calls outside a job run are charged to the memory owner, one purpose each.
        def metered(purpose: str) -> Callable[[int], ChatModel]:
            return metered_for_owner(timed_chat, repos.runs, clock, purpose, metrics)

        recall = make_recall(settings, db, embedder, clock)
        row_indexer = RowIndexer(db, embedder, transcript=repos.transcript,
                                 persons=repos.persons)
        cutter = EpisodeCutter(db, embedder, clock, chat, cut_settings(settings),
                               transcript=repos.transcript, persons=repos.persons,
                               chat_for=metered("cut:turn"))
        forgetter = ForgetClearsRecall(db, embedder, repos.facts, log=recall_log)
        extractor = FactExtractor(db, facts, repos.persons,
                                  min_confidence=settings.facts.min_confidence,
                                  input_tokens=settings.facts.input_tokens)
        after_turn: list[AfterTurn] = [
            row_indexer,
            ExtractAfterTurn(cutter, extractor,
                             metered("extract:turn"), clock,
                             settings.facts.max_episodes)
            if settings.facts.extract_after_turn
            else cutter,
        ]
        policy = make_lifecycle_policy(settings)
        if settings.lifecycle.compact_after_turn:
            after_turn.append(CompactionHook(
                db, chat, clock, policy.compaction,
                chat_for=metered("compact:turn")))
        if settings.facts.tools:
            MemoryTools(facts, repos.transcript, clock).register(tools)
        # Cognition: reminders and scheduled prompts (tools, /timezone), the ambient snapshot
        # and portrait in every prompt, and the background runner with the nine jobs.
        context = AmbientContext(repos.portraits, repos.reminders, repos.calendar,
                                 repos.transcript, clock, settings.cognition.upcoming_hours,
                                 mail=repos.mail, facts=repos.facts,
                                 portrait_facts=settings.cognition.portrait_facts)
        # /memory, /forget and friends let the processor's after-turn work settle first.
        memory_commands = MemoryCommands(
            repos.persons, repos.channels, forgetter, clock, repos.transcript, repos.episodes,
            context=lambda: context, settle=lambda: processor.drain(),
            connectors=repos.connectors,
        )
        memory_commands.register(commands)
        # /connect and /disconnect: services a person lets the connector sync read.
        box, reader = SecretBox(key_path(settings)), connector_reader(settings)
        ConnectorCommands(repos.connectors, box, reader, clock,
                          settle=lambda: processor.drain()).register(commands)
        reminder_ports = ReminderPorts(repos.persons, repos.reminders, clock)
        register_tools(tools, reminder_ports)
        register_commands(commands, reminder_ports)
        search = configured_search(settings)
        register_research_commands(commands, repos.persons, search)
        processor = TurnProcessor(
            settings=settings,
            persons=repos.persons,
            channels=repos.channels,
            transcript=repos.transcript,
            chat=timed_chat,
            clock=clock,
            commands=commands,
            tools=tools,
            recaller=RecordingRecaller(recall, recall_log, clock,
                                       metrics.recall_seconds.observe),
            context=context,
            after_turn=after_turn,
            chat_for=metered("chat:turn"),
            on_result=metrics.turn_done,
            window=window,
            turns=ChannelTurns(Leases(db),
                               ttl=timedelta(seconds=settings.bot.turn_lease_seconds)),
        )
        outbound = Outbound()
        services = Services(
            settings=settings,
            clock=clock,
            chat=chat,
            embedder=embedder,
            processor=processor,
            tools=tools,
            outbound=outbound,
            persons=repos.persons,
            channels=repos.channels,
            transcript=repos.transcript,
            episodes=repos.episodes,
            runs=repos.runs,
            reminders=repos.reminders,
            portraits=repos.portraits,
            calendar=repos.calendar,
            facts=facts,
            extractor=extractor,
            lifecycle=MemoryLifecycle(db, embedder, policy),
            leases=repos.leases,
            cutter=cutter,
            mail=repos.mail,
            connectors=[*configured_connectors(settings),
                        *personal_connectors(repos.connectors, box, reader)],
            search=search,
        )
        runner = Runner(services, default_registry())
        return cls(
            settings, db, clock, chat, embedder, repos.persons, repos.channels,
            repos.transcript, processor, facts, extractor, forgetter, commands,
            episodes=repos.episodes, recall=recall, cutter=cutter, row_indexer=row_indexer,
            outbound=outbound, services=services, runner=runner, repos=repos,
            inbox=SharedInbox(processor, TurnQueue(db), Leases(db), clock),
            agents=AgentMemory(repos.agents, repos.persons, facts, recall, clock,
                               processor.background_channel),
            metrics=metrics, web_links=web_links, web_command=web_command,
            recall_log=recall_log, memory_commands=memory_commands,
        )

    async def serve(
        self, adapters: Sequence[Adapter], stop: asyncio.Event, *, end_with: Adapter | None = None
    ) -> list[str]:
        """Run `adapters` and the cognition runner until `stop` is set (or `end_with` ends).

        Each adapter's `send` is registered for outbound delivery (reminders, scheduled
        prompts). On the way out adapters stop first, then the runner (a job in flight is
        cancelled and redone at the next start), then after-turn work drains. Returns one line
        per adapter that failed (empty when all ended cleanly).
        """
        failures: list[str] = []
        tasks: dict[asyncio.Task[Any], Adapter] = {}
        for adapter in adapters:
            self.outbound.register(adapter.platform, adapter.send)
            tasks[asyncio.create_task(adapter.start(self.inbox or self.processor),
                                      name=f"adapter-{adapter.platform}")] = adapter
        if self.runner is not None and self.settings.cognition.enabled:
            self.runner.start()
        stopper = asyncio.create_task(stop.wait(), name="strata-stop")
        try:
            while not stop.is_set():
                live: list[asyncio.Task[Any]] = [t for t in tasks if not t.done()]
                done, _ = await asyncio.wait([stopper, *live], return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    ended = tasks.get(task)
                    if ended is None:
                        continue
                    if not task.cancelled() and task.exception() is not None:
                        log.error("the %s adapter stopped: %r", ended.platform, task.exception())
                        failures.append(f"{ended.platform}: {task.exception()}")
                    self.outbound.unregister(ended.platform)
                    if ended is end_with or all(t.done() for t in tasks):
                        stop.set()
        finally:
            stopper.cancel()
            for adapter in adapters:
                with contextlib.suppress(Exception):
                    await adapter.stop()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, stopper, return_exceptions=True)
            if self.runner is not None:
                await self.runner.stop()
        return failures


    def web_server(self) -> WebServer:
        """The web view and the operators' endpoints over this app's repositories (the `web`
        extra: Starlette and Jinja2 are imported only here)."""
        from strata.app.web.server import WebServer
        from strata.app.web.view import MemoryView

        assert self.repos is not None and self.web_links is not None
        assert self.memory_commands is not None and self.recall_log is not None
        r = self.repos
        queue = TurnQueue(self.db)

        async def scrape() -> None:
            self.metrics.queue_depth.set(await queue.count())
            self.metrics.jobs(await r.runs.totals_by_job())

        return WebServer(
            links=self.web_links,
            view=MemoryView(self.clock, r.channels, r.transcript, r.episodes, r.facts, r.runs,
                            self.recall_log),
            persons=r.persons, commands=self.memory_commands, metrics=self.metrics,
            checks={"database": queue.count, "model": self.chat.list_models},
            before_scrape=scrape,
            secure_cookie=self.settings.web.public_url.startswith("https://"),
            operator_token=self.settings.web.operator_token,
        )

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.stop()
        await self.processor.drain()
        if self.recall is not None:
            await self.recall.close()
        await self.chat.close()
        await self.embedder.close()
        await self.db.close()
