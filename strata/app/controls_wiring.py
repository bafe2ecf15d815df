"""Wiring of the controls every turn offers: the chat commands and the model's tools, built
once in the order `/help` lists them (`/link`, `/web`, memory's, cognition's), with the
ambient context (reminders, calendar, portrait) that memory's commands and every prompt share.
Part of the composition root (`strata.app.compose`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

from strata.app.cognition_wiring import (
    CognitionParts,
    ambient_context,
    register_cognition_controls,
)
from strata.app.memory_wiring import MemoryParts, Repos, register_memory_controls
from strata.app.web.command import WebCommand
from strata.app.web.links import WebLinks
from strata.bot.ambient import AmbientContext
from strata.bot.commands import CommandRouter
from strata.bot.link import LinkCommand
from strata.bot.memory_commands import MemoryCommands
from strata.bot.tools import ToolRegistry
from strata.core.config import Settings
from strata.core.ports import Clock
from strata.memory.store.services.web_access import WebTokens


@dataclass(frozen=True)
class Controls:
    """The commands and tools, and the parts built with them that the app and its jobs use."""

    commands: CommandRouter
    tools: ToolRegistry
    context: AmbientContext
    memory_commands: MemoryCommands
    cognition: CognitionParts
    web_links: WebLinks
    web_command: WebCommand


def web_parts(settings: Settings, tokens: WebTokens,
              clock: Clock) -> tuple[WebLinks, WebCommand]:
    """The web view's sign-in links and sessions (in the database, so every process sees
    them), and the /web command that hands them out."""
    web_links = WebLinks(tokens, clock, timedelta(minutes=settings.web.link_minutes),
                         timedelta(minutes=settings.web.session_minutes))
    return web_links, WebCommand(web_links, settings.web.public_url, settings.web.enabled)


def build_controls(settings: Settings, web_tokens: WebTokens, repos: Repos,
                   memory: MemoryParts, clock: Clock,
                   settle: Callable[[], Awaitable[None]]) -> Controls:
    """Every command and tool; `web_tokens` keep the web view's links and sessions, and
    `settle` lets after-turn work in flight finish before a memory command runs."""
    commands, tools = CommandRouter(), ToolRegistry()
    LinkCommand(repos.links, repos.persons, clock).register(commands)
    web_links, web_command = web_parts(settings, web_tokens, clock)
    web_command.register(commands)
    context = ambient_context(settings, repos, clock)
    memory_commands = register_memory_controls(commands, tools, settings, repos, memory,
                                               clock, context, settle)
    cognition = register_cognition_controls(commands, tools, settings, repos, clock, settle)
    return Controls(commands, tools, context, memory_commands, cognition, web_links,
                    web_command)
