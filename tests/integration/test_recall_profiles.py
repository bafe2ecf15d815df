"""The gate's penalty for a question about another person of the same name, through recall on a
real database (SQLite and PostgreSQL, tests/conftest.py) with the fake server's embeddings."""

from __future__ import annotations

from strata.bot.llm import OpenAIEmbedder
from strata.core.clock import ManualClock
from strata.memory.engines.db import Database

# `_close_recalls` is test_recall's autouse fixture: imported, it closes this module's recalls
# too (each holds four open connections, whose threads would hold pytest at its exit).
from tests.integration.test_recall import (  # noqa: F401 - fixtures
    _close_recalls,
    emb,
    index,
    recall_for,
)
from tests.memory_helpers import channel, filler, person, turn, turns

TEAM = "my team won the county league final last night, the whole town came"


async def test_a_question_about_things_the_memory_never_ties_to_the_person_is_silenced(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock) -> None:  # noqa: F811
    john = await person(db, "John", clock)
    ch = await channel(db, john, "john/d", clock)
    await turn(db, ch, john, TEAM, clock, reply="Congratulations!")
    await turns(db, ch, john, [filler(i) for i in range(30)], clock)
    await index(db, emb, clock)
    other = "What did John's teammates say about the county league final last night?"
    own = "How did John's team do in the county league final last night?"
    # Off (0, the default): the other John's question finds the league final and gets a block.
    off = recall_for(db, emb, clock)
    assert (await off.search(john.id, other, clock.now())).items != ()
    # On: John's teammates are never his in this memory (his team is); his team still is.
    on = recall_for(db, emb, clock, gate_unowned=20.0)
    assert (await on.search(john.id, other, clock.now())).items == ()
    result = await on.search(john.id, own, clock.now())
    assert any("county league" in item.text for item in result.items)
