"""The composition root: builds the database, model clients, repositories and the turn
processor from `Settings`, and owns their lifetimes (`App`). The wiring is split by job:
`model_wiring` (clock, chat model, embedder), `memory_wiring` (database, repositories, recall,
after-turn memory work), `cognition_wiring` (cognition's commands and tools, the jobs'
services), `controls_wiring` (every command and tool, in order) and `adapter_wiring` (the
platform adapters). These modules and `strata.app.cli` are the only ones that may import
`adapters` and `cognition`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from strata.app.agent_memory import AgentMemory
from strata.app.cognition_wiring import build_services
from strata.app.controls_wiring import build_controls
from strata.app.memory_wiring import (
    MemoryParts,
    Repos,
    build_memory,
    open_db,
)
from strata.app.model_wiring import default_clock, make_chat_model, make_embedder
from strata.app.web.command import WebCommand
from strata.app.web.links import WebLinks
from strata.bot.ambient import AmbientContext
from strata.bot.claims import ChannelClaims
from strata.bot.commands import CommandRouter
from strata.bot.context_window import ContextWindow, fitted_settings, model_window
from strata.bot.hypothetical import HypotheticalRecall, HypotheticalTurn
from strata.bot.llm import OpenAIChatModel, OpenAIEmbedder
from strata.bot.llm_sdk import load_sdk
from strata.bot.memory_commands import MemoryCommands
from strata.bot.metered_chat import Metered, OwnerModel, metered_for_owner
from strata.bot.metrics import Metrics
from strata.bot.outbound import Outbound
from strata.bot.recall_record import RecordingRecaller
from strata.bot.reply_checks import ReplyChecks
from strata.bot.scheduler import TurnScheduler
from strata.bot.timed_chat import TimedChat
from strata.bot.tools import ToolRegistry
from strata.bot.turns import TurnProcessor
from strata.bot.writers.episodes import EpisodeCutter
from strata.bot.writers.facts import FactExtraction
from strata.cognition.jobs import default_registry
from strata.cognition.runner import Runner
from strata.cognition.services import Services
from strata.core.config import Settings
from strata.core.identity import ProcessIdentity, this_process
from strata.core.ports import Adapter, ChatModel, Clock, Recaller
from strata.memory.coordination.leases import Leases
from strata.memory.coordination.turn_queue import TurnQueue
from strata.memory.engines.db import Database
from strata.memory.engines.fts import load_stemmer
from strata.memory.facts.fact_store import FactStore
from strata.memory.recall.search import Recall
from strata.memory.store.episodes import EpisodeRepo
from strata.memory.store.forgetting.forget import Forgetter
from strata.memory.store.intake import TurnIntake
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.row_vectors import RowIndexer
from strata.memory.store.services.web_access import RecallLogRepo, WebTokens
from strata.memory.store.transcript import TranscriptRepo

if TYPE_CHECKING:
    from strata.app.web.server import WebServer

log = logging.getLogger(__name__)


async def open_fitted(settings: Settings) -> tuple[Settings, ContextWindow | None, Database]:
    """The database, and the model's context window; the settings fitted to that window."""
    # A small window (a local model's) bounds every prompt and background call's input.
    # Asked while the database opens: start-up waits for the slower of the two only.
    window, db = await asyncio.gather(model_window(settings), open_db(settings))
    if window is not None:
        settings = fitted_settings(settings, window)
    return settings, window, db


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
    extractor: FactExtraction
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
    # What the adapters are handed: every platform message becomes a turn through it, in
    # whichever process on the database claims the channel (`strata.bot.scheduler`).
    scheduler: TurnScheduler | None = None
    # What external agents may do with their person's memory (`strata mcp`).
    agents: AgentMemory | None = None
    # The web view's parts (strata.app.web): its links and sessions, what recall showed the model,
    # the operators' metrics, and the commands its buttons run.
    metrics: Metrics = field(default_factory=Metrics)
    web_links: WebLinks | None = None
    web_command: WebCommand | None = None
    recall_log: RecallLogRepo | None = None
    memory_commands: MemoryCommands | None = None
    # What the first turn needs and start-up does not (the stemmer, the model SDK), loading
    # in a thread once `serve` has started the adapters (`warm_up`).
    warming: asyncio.Future[None] | None = None

    @classmethod
    async def create(cls, settings: Settings, clock: Clock | None = None,
                     identity: ProcessIdentity | None = None) -> App:
        """Everything wired once, in dependency order: each part gets the repositories and
        ports it uses when it is built, and nothing is patched in afterwards. `identity`: whom
        this app's leases and claims name (default this process; a test running several apps
        as several processes passes one each)."""
        settings, window, db = await open_fitted(settings)
        try:
            return cls._wired(settings, clock or default_clock(settings),
                              identity or this_process(), window, db)
        except BaseException:
            # A part that refuses its settings (a misspelt job name) must not leave the file
            # open: each open connection keeps a thread that holds the process at its exit.
            await db.close()
            raise

    @classmethod
    def _wired(cls, settings: Settings, clock: Clock, identity: ProcessIdentity,
               window: ContextWindow | None, db: Database) -> App:
        """The parts over an open database, each given what it uses when it is built."""
        metrics, recall_log = Metrics(), RecallLogRepo(db)
        chat = make_chat_model(settings)
        timed_chat = TimedChat(chat, metrics)
        embedder = make_embedder(settings)
        repos = Repos.over(db)

        # Model calls outside a job run are charged to the memory owner, one purpose each.
        def metered(purpose: str) -> OwnerModel:
            return metered_for_owner(timed_chat, repos.runs, clock, purpose, metrics)

        async def settle() -> None:  # after-turn work in flight, before a memory command
            await processor.drain()

        memory = build_memory(settings, db, repos, embedder, chat, clock, metered, recall_log)
        controls = build_controls(settings, WebTokens(db), repos, memory, clock, settle)
        # One turn at a time per channel across the processes on the database, and the turns
        # taken in and not yet answered (`strata.bot.scheduler`).
        claims = ChannelClaims(Leases(db), holder=identity.id,
                               ttl=timedelta(seconds=settings.bot.turn_lease_seconds),
                               clock=clock)
        queue = TurnQueue(db)
        processor = turn_processor(settings, repos, memory, timed_chat, clock, controls.commands,
                                   controls.tools, controls.context, metered, metrics, recall_log,
                                   window, claims, queue)
        outbound = Outbound()
        services = build_services(settings, clock, chat, embedder, processor, controls.tools,
                                  outbound, repos, memory, controls.cognition)
        return cls(
            settings, db, clock, chat, embedder, repos.persons, repos.channels,
            repos.transcript, processor, memory.facts, memory.extractor, memory.forgetter,
            controls.commands, episodes=repos.episodes, recall=memory.recall, cutter=memory.cutter,
            row_indexer=memory.row_indexer, outbound=outbound, services=services,
            runner=Runner(services, default_registry(), identity=identity), repos=repos,
            scheduler=TurnScheduler(processor, TurnIntake(db), queue, claims, clock,
                                    max_turns=settings.bot.max_turns),
            agents=AgentMemory(repos.agents, repos.persons, memory.facts, memory.recall, clock,
                               processor.background_channel),
            metrics=metrics, web_links=controls.web_links, web_command=controls.web_command,
            recall_log=recall_log, memory_commands=controls.memory_commands,
        )

    def turns(self) -> TurnScheduler:
        """The turn scheduler every adapter is started with."""
        assert self.scheduler is not None
        return self.scheduler

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
            tasks[asyncio.create_task(adapter.start(self.turns()),
                                      name=f"adapter-{adapter.platform}")] = adapter
        if self.runner is not None and self.settings.cognition.enabled:
            self.runner.start()
        # After the adapters' start: loading in a thread while the parts above are built
        # would slow the building down (both need the interpreter), and so the first poll.
        self.warming = self.warming or asyncio.get_running_loop().run_in_executor(None, warm_up)
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
        if self.warming is not None:
            await self.warming
        if self.runner is not None:
            await self.runner.stop()
        await self.processor.drain()
        if self.recall is not None:
            await self.recall.close()
        await self.chat.close()
        await self.embedder.close()
        await self.db.close()


def turn_processor(settings: Settings, repos: Repos, memory: MemoryParts,
                   chat: ChatModel, clock: Clock, commands: CommandRouter, tools: ToolRegistry,
                   context: AmbientContext, metered: Metered,
                   metrics: Metrics, recall_log: RecallLogRepo,
                   window: ContextWindow | None, claims: ChannelClaims,
                   queue: TurnQueue) -> TurnProcessor:
    """The turn processor with all its parts; `chat` is the timed model."""
    recaller: Recaller = memory.recall
    if settings.recall.hypothetical:  # recall searches with a hypothetical line too
        recaller = HypotheticalRecall(memory.recall, HypotheticalTurn(
            metered("chat:hypothetical"), settings.recall.hypothetical_seconds),
            always=settings.recall.hypothetical_always)
    return TurnProcessor(
        settings=settings,
        persons=repos.persons,
        channels=repos.channels,
        transcript=repos.transcript,
        chat=chat,
        clock=clock,
        commands=commands,
        tools=tools,
        recaller=RecordingRecaller(recaller, recall_log, clock,
                                   metrics.recall_seconds.observe),
        context=context,
        after_turn=memory.after_turn,
        chat_for=metered("chat:turn"),
        on_result=metrics.turn_done,
        reply_checks=ReplyChecks(on_caught=metrics.reply_corrected),
        window=window,
        claims=claims,
        queue=queue,
    )


def warm_up() -> None:
    """Load what the first turn needs and start-up does not: the Porter stemmer (recall's
    first query) and the model SDK (the first model call); about a second."""
    load_stemmer()
    load_sdk()
