"""What background cognition works with: the app's services, built once by the composition
root (`strata.app.compose`) and passed to the runner and the reminder delivery.

Jobs do not see this whole set: each job names the few ports it uses in its own Protocol
(`strata.cognition.jobs.*`), and `Services` satisfies all of them. There is no database handle here:
what a job does to memory goes through a repository or
`strata.memory.lifecycle.passes.MemoryLifecycle`.

Defined here, not in `strata.app.compose`, because `strata.app.compose` imports `cognition` (never
the other way). May import `bot` and `memory`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from strata.bot.outbound import Outbound
from strata.bot.tools import ToolRegistry
from strata.bot.turns import TurnProcessor
from strata.bot.writers.episodes import EpisodeCutter
from strata.bot.writers.facts import FactExtraction
from strata.cognition.connectors import Connector
from strata.cognition.research import SearchProvider
from strata.core.config import Settings
from strata.core.ports import ChatModel, Clock, Embedder
from strata.memory.coordination.claims import RunnerLeases
from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.facts.fact_store import FactStore
from strata.memory.lifecycle.passes import MemoryLifecycle
from strata.memory.store.episodes import EpisodeRepo
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.portraits import PortraitRepo
from strata.memory.store.refusals import RefusalRepo
from strata.memory.store.services.calendar import CalendarRepo
from strata.memory.store.services.connectors import MailHeaders
from strata.memory.store.services.reminders import ReminderRepo
from strata.memory.store.transcript import TranscriptRepo


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
    extractor: FactExtraction
    lifecycle: MemoryLifecycle
    leases: RunnerLeases
    mail: MailHeaders
    refusals: RefusalRepo
    cutter: EpisodeCutter | None = None
    connectors: list[Connector] = field(default_factory=list)
    search: SearchProvider | None = None
