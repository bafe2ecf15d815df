"""Build a small demo memory and draw it with `strata memory map` (the README's picture).

    python bench/demo_map.py docs/memory-map.png

A person "alice" gets 66 leaf episodes about five topics plus a few one-off moments, embedded
by the fake OpenAI-compatible server's hashed bag of words (a real embedding model separates
topics better). The picture shows them before the roll-up would turn each topic into a
super-episode.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from strata.app.cli import main as strata  # noqa: E402
from strata.core.types import ChannelKind  # noqa: E402
from strata.memory.engines.db import Database  # noqa: E402
from strata.memory.store.episodes import EpisodeRepo, NewEpisode  # noqa: E402
from strata.memory.store.persons import ChannelRepo, PersonRepo  # noqa: E402
from tests.fakes.openai_server import hashed_embedding  # noqa: E402

DIM = 256
TOPICS = {
    "marathon training": "run marathon training km pace knee long run shoes interval race",
    "sister's wedding": "sister wedding dress venue speech guests flowers cake toast family",
    "job search": "job interview recruiter offer salary resume startup manager role python",
    "learning piano": "piano lesson chopin scales practice teacher recital keys nocturne",
    "moving flat": "flat move boxes landlord rent deposit kitchen lease neighbours keys",
}
ONE_OFFS = ["saw a heron at the canal", "dentist appointment moved to friday",
            "watched a documentary about octopuses", "lost an umbrella on the tram",
            "tried a new ramen place", "power cut during the storm"]


async def build(path: Path) -> None:
    rnd = random.Random(3)
    db = await Database.open(path, DIM)
    now = datetime(2026, 5, 1, tzinfo=UTC)
    try:
        person = await PersonRepo(db).get_or_create("console:alice", "alice", now)
        channel = await ChannelRepo(db).get_or_create(
            platform="console", room_ref="alice/default", owner_id=person.id,
            kind=ChannelKind.PRIVATE, source="user", now=now)
        repo = EpisodeRepo(db)
        texts = []
        for name, vocab in TOPICS.items():
            words = vocab.split()
            for _ in range(12):
                texts.append((f"{name}: " + " ".join(rnd.sample(words, 6)), name))
        texts += [(t, "") for t in ONE_OFFS]
        rnd.shuffle(texts)
        for i, (text, terms) in enumerate(texts):
            when = now - timedelta(days=len(texts) - i)
            await repo.insert(NewEpisode(person.id, channel.id, text, "user", when, when, (),
                                         key_terms=terms),
                              hashed_embedding(text, DIM), when)
    finally:
        await db.close()


def run(out: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "demo.db"
        asyncio.run(build(db_path))
        os.environ.update({"STRATA_DB": str(db_path), "STRATA_EMBED_DIM": str(DIM)})
        return strata(["memory", "map", "--user", "alice", "--out", out])


if __name__ == "__main__":
    sys.exit(run(sys.argv[1] if len(sys.argv) > 1 else "memory-map.png"))
