"""Wiring of cognition: the ambient snapshot and portrait in every prompt, cognition's chat
commands and tools (personal connectors, reminders and scheduled prompts, research), and
what the background runner hands its jobs (`Services`). Part of the composition root
(`strata.app.compose`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from strata.app.memory_wiring import MemoryParts, Repos
from strata.bot.ambient import AmbientContext
from strata.bot.commands import CommandRouter
from strata.bot.outbound import Outbound
from strata.bot.remind_requests import RemindWords
from strata.bot.reminder_tools import ReminderPorts, register_commands, register_tools
from strata.bot.tools import ToolRegistry
from strata.bot.turns import TurnProcessor
from strata.cognition.connector_secrets import SecretBox, key_path
from strata.cognition.connectors import configured_connectors
from strata.cognition.personal_connectors import (
    ConnectorCommands,
    ConnectorReader,
    connector_reader,
    personal_connectors,
)
from strata.cognition.research import SearchProvider, configured_search
from strata.cognition.research import register_commands as register_research_commands
from strata.cognition.services import Services
from strata.core.config import Settings
from strata.core.ports import ChatModel, Clock, Embedder


def ambient_context(settings: Settings, repos: Repos, clock: Clock) -> AmbientContext:
    """The ambient snapshot (reminders, calendar, mail) and the portrait for every prompt."""
    return AmbientContext(repos.portraits, repos.reminders, repos.calendar,
                          repos.transcript, clock, settings.cognition.upcoming_hours,
                          mail=repos.mail, facts=repos.facts,
                          portrait_facts=settings.cognition.portrait_facts)


@dataclass(frozen=True)
class CognitionParts:
    """What cognition's commands were built with, and the jobs use too."""

    box: SecretBox
    reader: ConnectorReader
    search: SearchProvider | None


def register_cognition_controls(commands: CommandRouter, tools: ToolRegistry, settings: Settings,
                          repos: Repos, clock: Clock,
                          settle: Callable[[], Awaitable[None]]) -> CognitionParts:
    """/connect and /disconnect (services a person lets the connector sync read; `settle`
    lets after-turn work finish first), the reminder tools and commands, and research's."""
    box, reader = SecretBox(key_path(settings)), connector_reader(settings)
    ConnectorCommands(repos.connectors, box, reader, clock, settle=settle).register(commands)
    reminder_ports = ReminderPorts(repos.persons, repos.reminders, clock)
    register_tools(tools, reminder_ports)
    register_commands(commands, reminder_ports)
    RemindWords(reminder_ports).register(tools, commands)  # "remind me …" without a model
    search = configured_search(settings)
    register_research_commands(commands, repos.persons, search)
    return CognitionParts(box, reader, search)


def build_services(settings: Settings, clock: Clock, chat: ChatModel, embedder: Embedder,
                   processor: TurnProcessor, tools: ToolRegistry, outbound: Outbound,
                   repos: Repos, memory: MemoryParts, cognition: CognitionParts) -> Services:
    """What the runner hands every job (no database: repositories and ports only)."""
    return Services(
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
        facts=memory.facts,
        extractor=memory.extractor,
        lifecycle=memory.lifecycle,
        leases=repos.leases,
        cutter=memory.cutter,
        mail=repos.mail,
        refusals=repos.refusals,
        connectors=[*configured_connectors(settings),
                    *personal_connectors(repos.connectors, cognition.box,
                                         cognition.reader)],
        search=cognition.search,
    )

