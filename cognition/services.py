"""What background cognition works with: the app's services, built once by the composition
root (`bot.app`) and passed to the runner and the reminder delivery.

Jobs do not see this whole set: each job names the few ports it uses in its own Protocol
(`cognition.jobs.*`), and `Services` satisfies all of them. There is no database handle here:
what a job does to memory goes through a repository or `memory.lifecycle.MemoryLifecycle`.

Defined here, not in `bot.app`, because `bot.app` imports `cognition` (never the other way).
May import `bot` and `memory`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.config import Settings
from bot.outbound import Outbound
from bot.ports import ChatModel, Clock, Embedder
from bot.turns import ToolRegistry, TurnProcessor
from cognition.connectors import Connector
from cognition.research import SearchProvider
from memory.calendar import CalendarRepo
from memory.claims import RunnerLeases
from memory.connectors import MailHeaders
from memory.episode_cut import EpisodeCutter
from memory.episodes import EpisodeRepo
from memory.fact_extraction import FactExtractor
from memory.facts import FactStore
from memory.jobruns import JobRunRepo
from memory.lifecycle import MemoryLifecycle
from memory.persons import ChannelRepo, PersonRepo
from memory.portraits import PortraitRepo
from memory.reminders import ReminderRepo
from memory.transcript import TranscriptRepo


@dataclass(frozen=True)
class Services:
    settings: Settings
    clock: Clock
    chat: ChatModel
    embedder: Embedder
    processor: TurnProcessor
    tools: ToolRegistry
    outbound: Outbound
    persons: PersonRepo
    channels: ChannelRepo
    transcript: TranscriptRepo
    episodes: EpisodeRepo
    runs: JobRunRepo
    reminders: ReminderRepo
    portraits: PortraitRepo
    calendar: CalendarRepo
    facts: FactStore
    extractor: FactExtractor
    lifecycle: MemoryLifecycle
    leases: RunnerLeases
    mail: MailHeaders
    cutter: EpisodeCutter | None = None
    connectors: list[Connector] = field(default_factory=list)
    search: SearchProvider | None = None
