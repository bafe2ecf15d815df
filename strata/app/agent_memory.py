"""What an external agent may do with the memory of the one person it is bound to.

`strata mcp` (`strata.app.mcp_server`) offers these as tools; this module knows nothing of the
protocol. Every call starts from the agent's binding, read afresh (a removed agent is refused
at once), and acts on that person's own scope: `remember` writes a fact with source
`external-agent:NAME` on the person's `external-agent:NAME` background channel, `recall` is
the turn-zero search over the person's memory (a shared room is owned by its own scope, so
nothing said in a group is in it), and `list_facts` lists the person's live facts. Agents
never see another person's memory, and never a room's. Imports `bot` modules and `memory`.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from strata.core.errors import MutedSourceError, StrataError, UnknownKindError
from strata.core.ports import Clock
from strata.core.text import clean_text
from strata.core.types import Channel, Person
from strata.memory.facts.fact_store import FactStore
from strata.memory.recall.search import Recall
from strata.memory.rules.fact_types import FACT_KINDS, NewFact
from strata.memory.store.persons import PersonRepo
from strata.memory.store.services.agents import Agent, AgentRepo

log = logging.getLogger(__name__)

# What an agent may write: every kind but the bot's own reflections (those are labelled "my
# own reflections" to the person, which an agent's note is not).
AGENT_KINDS: tuple[str, ...] = tuple(k for k in FACT_KINDS if k != "reflection")
MAX_FACT_CHARS = 1000
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
TOKEN_PREFIX = "strata_"


class AgentError(StrataError):
    """A request an agent may not make, or one that does not fit; the message says why."""


def check_agent_name(name: str) -> str:
    """A name fit for the source `external-agent:NAME` and for /memory's "from NAME"."""
    if not 1 <= len(name) <= 40 or not set(name) <= NAME_CHARS:
        raise AgentError(f"agent name {name!r}: use 1-40 lower-case letters, digits, - or _")
    return name


def new_token() -> str:
    """A fresh bearer token: 256 random bits, with a prefix that makes it easy to spot."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class FactView:
    """One live fact as an agent sees it."""

    id: int
    kind: str
    text: str
    since: str
    source: str


@dataclass
class AgentMemory:
    agents: AgentRepo
    persons: PersonRepo
    facts: FactStore
    recall: Recall
    clock: Clock
    # The person's background channel for a source, created once (the turn processor's).
    channel_for: Callable[[Person, str], Awaitable[Channel]]

    async def bound(self, name: str) -> tuple[Agent, Person]:
        """The agent called `name` and its person, or AgentError when it is not (any more)."""
        agent = await self.agents.by_name(name)
        person = await self.persons.get(agent.person_id) if agent is not None else None
        if agent is None or person is None:
            raise AgentError(f"there is no agent named {name!r} (strata agents list)")
        await self.agents.mark_used(agent.name, self.clock.now())
        return agent, person

    async def remember(self, name: str, text: str, kind: str = "note",
                       attribute: str = "") -> str:
        """Store one fact about the agent's person; the reply names its id."""
        agent, person = await self.bound(name)
        text = clean_text(text).strip()  # as a person's message: no terminal control
        if not text:
            raise AgentError("the fact's text is empty")
        if len(text) > MAX_FACT_CHARS:
            raise AgentError(f"the fact is {len(text)} characters; at most {MAX_FACT_CHARS}")
        if kind not in AGENT_KINDS:
            raise AgentError(f"unknown fact kind {kind!r}; the kinds are: {', '.join(AGENT_KINDS)}")
        if person.paused:
            raise AgentError("this person's memory is paused (/pause): nothing was stored")
        channel = await self.channel_for(person, agent.source)
        new = NewFact(owner_id=person.id, kind=kind, text=text, source=agent.source,
                      subject="self", attribute=attribute, confidence=0.8,
                      channel_id=channel.id)
        try:
            result = await self.facts.add(new, self.clock.now())
        except (UnknownKindError, MutedSourceError) as exc:
            raise AgentError(str(exc)) from None
        log.info("agent %s stored a %s fact for person %s", agent.name, kind, person.id)
        if result.fact_id is None:
            return f"already remembered as fact #{result.duplicate_of}"
        replaced = (f"; it replaces #{', #'.join(map(str, result.superseded))}"
                    if result.superseded else "")
        return f"remembered as fact #{result.fact_id}{replaced}"

    async def search(self, name: str, query: str) -> str:
        """What turn-zero recall would bring into a private chat with the person for `query`
        (read only: nothing is marked as used)."""
        _, person = await self.bound(name)
        if not query.strip():
            raise AgentError("the query is empty")
        vector = await self.recall.embed_query(query)
        result = await self.recall.search(person.id, query, self.clock.now(), vector=vector)
        found = result.render() or "nothing relevant is remembered"
        if vector is None:  # recall fell back to keywords: the agent is told, not left guessing
            return ("(the embedding model did not answer, so this is a keyword search only: "
                    "what is remembered in other words may be missing)\n" + found)
        return found

    async def list_facts(self, name: str) -> list[FactView]:
        """The person's live facts, oldest first."""
        _, person = await self.bound(name)
        return [FactView(f.id, f.kind, f.text, f.valid_from.date().isoformat(), f.source)
                for f in await self.facts.repo.for_owner(person.id)]
