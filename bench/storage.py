"""Database bytes per person: many quiet people, and a few talkative ones.

Each scenario builds a fresh store in a temporary folder with the real migrations and
repositories: people with a private channel each, turns appended through `TranscriptRepo`
(the person's message and the bot's reply), row vectors through the chat's own `RowIndexer`,
and leaf episodes through `EpisodeRepo` (one per 20 turns, and one for a person with a single
turn, as the idle job's episode cut makes it), each citing its rows. Vectors are deterministic
fake unit vectors (no model needed); texts are short made-up sentences. After a WAL checkpoint
the file's size is read.

Scenarios: 1, 100 and 10,000 people with one turn each, and 100 people with 1,000 turns each,
plus the empty migrated store. `per_person_bytes` is (size − empty size) / people, the cost a
person adds; the target (64 KB per person with one message) is checked in the same run for
every one-message scenario. `vector_chunk_bytes` says how much of it is vec0 chunk space.

    python bench/storage.py --out bench/results/storage.json

`--dim` defaults to 768 (the configured default); `--quick` skips the 10,000-people scenario.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.report import write_report  # noqa: E402
from strata.core.ports import Vector  # noqa: E402 - after the path set-up
from strata.core.types import ChannelKind, NewRow, Role  # noqa: E402
from strata.memory.engines.db import Database  # noqa: E402
from strata.memory.store.episodes import EpisodeRepo, NewEpisode  # noqa: E402
from strata.memory.store.persons import ChannelRepo, PersonRepo  # noqa: E402
from strata.memory.store.row_vectors import RowIndexer  # noqa: E402
from strata.memory.store.transcript import TranscriptRepo  # noqa: E402

TARGET_BYTES_PER_PERSON = 64 * 1024
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
TURNS_PER_EPISODE = 20
WORDS = ["tea", "river", "garden", "train", "letter", "music", "window", "bread", "sister",
         "piano", "trip", "doctor", "market", "winter", "coffee", "friend", "city", "book",
         "movie", "dog", "walk", "cake", "beach", "rain"]


class HashEmbedder:
    """Deterministic unit vectors from each text's hash (the `strata.core.ports.Embedder` shape)."""

    def __init__(self, dim: int) -> None:
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> list[Vector | None]:
        return [self.one(t) for t in texts]

    def one(self, text: str) -> npt.NDArray[np.float32]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).normal(size=self._dim).astype(np.float32)
        return (v / np.linalg.norm(v)).astype(np.float32)


def sentence(person: int, turn: int) -> str:
    n = len(WORDS)
    return f"p{person} t{turn}: " + " ".join(WORDS[(person * 7 + turn * 3 + j) % n]
                                            for j in range(12))


async def add_person(db: Database, embedder: HashEmbedder, p: int, turns: int) -> None:
    persons, channels = PersonRepo(db), ChannelRepo(db)
    transcript, episodes = TranscriptRepo(db), EpisodeRepo(db)
    indexer = RowIndexer(db, embedder, transcript=transcript, persons=PersonRepo(db))
    person = await persons.get_or_create(f"bench:{p}", f"person{p}", START)
    channel = await channels.get_or_create(
        platform="bench", room_ref=str(p), owner_id=person.id, kind=ChannelKind.PRIVATE,
        source="user", now=START)
    window: list[int] = []
    first = START
    for t in range(turns):
        ts = START + timedelta(minutes=2 * t)
        text = sentence(p, t)
        window += await transcript.append([
            NewRow(channel.id, person.id, ts, channel.source, Role.USER, text, f"{p}:{t}"),
            NewRow(channel.id, None, ts, channel.source, Role.ASSISTANT, f"Noted: {text}",
                   f"{p}:{t}"),
        ])
        if (t + 1) % TURNS_PER_EPISODE == 0 or t == turns - 1:
            await indexer.index_channel(channel.id)
            summary = f"person{p} talked about " + " ".join(text.split()[1:8])
            await episodes.insert(
                NewEpisode(person.id, channel.id, summary, "user", first, ts, tuple(window),
                           method="extractive"),
                embedder.one(summary), ts)
            window, first = [], ts + timedelta(minutes=2)


async def measure(dim: int, people: int, turns: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="strata-storage-") as tmp:
        path = Path(tmp) / "storage.db"
        db = await Database.open(path, dim)
        embedder = HashEmbedder(dim)
        t0 = time.perf_counter()
        try:
            for p in range(people):
                await add_person(db, embedder, p, turns)
            await db.checkpoint()
            chunk = await db.fetchval("SELECT max(size) FROM transcript_vec_chunks")
            vector_bytes = await _vector_bytes(db)
        finally:
            await db.close()
        size = path.stat().st_size + _wal(path)
    return {"people": people, "turns_each": turns, "db_bytes": size,
            "vec0_chunk_size": chunk, "build_seconds": round(time.perf_counter() - t0, 1),
            "vector_chunk_bytes": vector_bytes}


def _wal(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


async def _vector_bytes(db: Database) -> dict[str, int]:
    """Bytes of vector chunk blobs per vec0 table (allocated slots, used or not)."""
    return {t: int(await db.fetchval(
        f"SELECT coalesce(sum(length(vectors)), 0) FROM {t}_vector_chunks00") or 0)
        for t in ("transcript_vec", "episode_vec", "fact_vec")}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    empty = await measure(args.dim, 0, 0)
    plan = [(1, 1), (100, 1)] + ([] if args.quick else [(10_000, 1)]) + [(100, 1000)]
    scenarios = []
    for people, turns in plan:
        print(f"{people} people × {turns} turns …", file=sys.stderr, flush=True)
        s = await measure(args.dim, people, turns)
        s["per_person_bytes"] = round((s["db_bytes"] - empty["db_bytes"]) / people)
        if turns == 1:
            s["meets_target"] = s["per_person_bytes"] <= TARGET_BYTES_PER_PERSON
        scenarios.append(s)
    one = [s for s in scenarios if s["turns_each"] == 1]
    return {
        "benchmark": "database bytes per person",
        "dim": args.dim,
        "target_bytes_per_person_one_message": TARGET_BYTES_PER_PERSON,
        "meets_target": all(s["meets_target"] for s in one),
        "empty_db_bytes": empty["db_bytes"],
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "scenarios": scenarios,
    }


def table(report: dict[str, Any]) -> str:
    lines = [f"empty store: {report['empty_db_bytes']:,} bytes (dim {report['dim']})",
             f"{'people':>7} {'turns':>6} {'db bytes':>15} {'per person':>12}  target 64 KB"]
    for s in report["scenarios"]:
        verdict = ("ok" if s["meets_target"] else "OVER") if "meets_target" in s else "-"
        lines.append(f"{s['people']:>7} {s['turns_each']:>6} {s['db_bytes']:>15,}"
                     f" {s['per_person_bytes']:>12,}  {verdict}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Database bytes per person.")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--quick", action="store_true", help="skip 10,000 people")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args(argv)
    report = asyncio.run(main_async(args))
    print(table(report))
    write_report(args.out, report)
    return 0 if report["meets_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
