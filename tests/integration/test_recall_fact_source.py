"""Facts as recall candidates (strata.memory.recall.facts): each fact shows where it came from,
and a warm search reads no channel again (a server database pays a round trip each)."""

from __future__ import annotations

from strata.core.clock import ManualClock
from strata.core.types import Channel
from strata.core.words import terms
from strata.memory.engines.db import Database
from strata.memory.recall.facts import FactCandidates
from strata.memory.recall.types import RecallQuery
from strata.memory.rules.fact_types import NewFact
from strata.memory.store.facts import FactRepo
from strata.memory.store.persons import ChannelRepo
from tests.memory_helpers import channel, person


class CountedChannels(ChannelRepo):
    """The real repository, counting the channels it reads by id."""

    read: list[int]

    async def get(self, channel_id: int) -> Channel | None:
        self.read.append(channel_id)
        return await super().get(channel_id)


def query(db: Database, owner_id: int, text: str, clock: ManualClock) -> RecallQuery:
    return RecallQuery(owner_id=owner_id, text=text, terms=tuple(terms(text)),
                       match=db.dialect.keyword_query(text), vector=None, now=clock.now(),
                       k=40, scan=2000)


async def test_fact_provenance_read_once_and_per_owner(db: Database,
                                                       clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    bob = await person(db, "bob", clock)
    home = await channel(db, alice, "alice/home", clock)
    other = await channel(db, bob, "bob/home", clock, platform="telegram")
    facts = FactRepo(db)
    await facts.add(NewFact(alice.id, "user_specific", "Plays the violin in Lisbon", "user",
                            channel_id=home.id), None, clock.now())
    await facts.add(NewFact(bob.id, "user_specific", "Plays the violin in Porto", "user",
                            channel_id=other.id), None, clock.now())
    channels = CountedChannels(db)
    channels.read = []
    source = FactCandidates(facts, channels)

    first = await source.candidates(query(db, alice.id, "violin", clock))
    again = await source.candidates(query(db, alice.id, "violin", clock))
    bobs = await source.candidates(query(db, bob.id, "violin", clock))

    assert [c.text for c in first] == ["Plays the violin in Lisbon"]
    assert [c.where for c in first] == [c.where for c in again] == ["private chat on console"]
    assert [(c.text, c.where) for c in bobs] == [("Plays the violin in Porto",
                                                  "private chat on telegram")]
    assert channels.read == [home.id, other.id]  # each channel read once
