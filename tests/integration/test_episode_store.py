import numpy as np

from strata.core.clock import ManualClock
from strata.core.types import ChannelKind
from strata.memory.engines.db import Database
from strata.memory.store.episodes import EpisodeRepo, NewEpisode
from strata.memory.store.persons import ChannelRepo, PersonRepo


async def test_insert_get_embeddings_tombstone(db: Database, clock: ManualClock) -> None:
    person = await PersonRepo(db).get_or_create("console:a", "a", clock.now())
    channel = await ChannelRepo(db).get_or_create(
        platform="console", room_ref="a/d", owner_id=person.id, kind=ChannelKind.PRIVATE,
        source="user", now=clock.now())
    repo = EpisodeRepo(db)
    vecs = np.eye(db.dim, dtype=np.float32)[:3]
    ids = [await repo.insert(NewEpisode(person.id, channel.id, f"ep {i}", "user", clock.now(),
                                        clock.now(), ()), vecs[i], clock.now())
           for i in range(3)]
    np.testing.assert_array_equal(await repo.embeddings(ids[::-1]), vecs[::-1])
    assert [e.id for e in await repo.apexes(channel.id, 0)] == ids
    parent = await repo.insert(NewEpisode(person.id, channel.id, "topic", "user", clock.now(),
                                          clock.now(), (), level=1), vecs[0], clock.now())
    await repo.tombstone(ids[:2], parent, clock.now())
    assert [e.id for e in await repo.apexes(channel.id, 0)] == [ids[2]]
    gone = await repo.get(ids[0])
    assert gone is not None and not gone.live and gone.parent_id == parent
