"""Turn-zero recall latency with 1k, 10k and 100k memories for one person among 50 people.

Recall's unit is a window of transcript rows (strata.memory.recall.rank), so a memory here is
a live transcript message row with its vector. For each size it builds a fresh SQLite store (the
real migrations, sqlite-vec and FTS5) in a temporary folder: 50 people with a private channel each;
the measured person owns `size` rows (in sessions of 20 turns, 30 s apart, spread over two
years), every other person `--others` rows (so the owner filters have to do their job).
Texts are synthetic (Zipf-distributed words from a made-up vocabulary, so FTS5 has real work)
and vectors are clustered unit vectors; queries are noisy copies of random rows of the
measured person (their content words: the 100 most frequent made-up words stand in for the
stopwords a real query drops), with their embeddings precomputed, so no model is needed and the
numbers are recall's own cost. In the same run, over the same vectors, it times:

- `recall`: the real turn-zero recall search (`strata.memory.recall.search`, default tuning), from
the query text to the chosen items (the freshness check of the person's row index, every window's
  BM25 and cosine, the episode searches, the gate, selection and rendering from fresh rows);
  the query's embedding is looked up, not computed. The first search of a person loads their
  rows into the index: `index_build_ms` is that one-off cost, not part of the percentiles;
- `vec_knn`: the owner-partitioned sqlite-vec kNN over the rows alone (what a kNN-based search
  would pay for one of its queries);
- `numpy_floor`: a brute-force cosine scan of the person's vectors in numpy (matrix · vector,
  then top-k) — the physical floor for an exact scan on this machine.

Run from the repository root (a few minutes for all three sizes):

    python bench/recall_latency.py --out bench/results/recall_latency.json

`--sizes 50,200 --people 3 --others 20 --queries 10` makes a smoke run of a second or two.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.report import write_report  # noqa: E402
from strata.core.clock import ManualClock, to_iso  # noqa: E402 - after the path set-up
from strata.core.types import Channel, ChannelKind, Person  # noqa: E402
from strata.memory.engines.db import Database  # noqa: E402
from strata.memory.recall.search import Recall  # noqa: E402
from strata.memory.recall.types import RecallTuning  # noqa: E402
from strata.memory.store.episodes import EpisodeRepo  # noqa: E402
from strata.memory.store.persons import ChannelRepo, PersonRepo  # noqa: E402
from strata.memory.store.recall_reads import RecallReads  # noqa: E402
from strata.memory.store.transcript import TranscriptRepo  # noqa: E402

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SPAN_DAYS = 730
TOP_K = 40
SESSION_TURNS = 20
ROW_WORDS = 25  # a chat turn is shorter than an episode summary
Vectors = npt.NDArray[np.float32]


# The most frequent made-up words play the part of a language's function words, which a real
# question's keyword search drops (strata.core.words.STOPWORDS): queries never use them.
FUNCTION_WORDS = 100


@dataclass
class Corpus:
    """Synthetic row texts and vectors for one owner."""

    texts: list[str]
    vectors: Vectors
    function_words: frozenset[str] = frozenset()


def vocabulary(rng: np.random.Generator, n: int = 6000) -> list[str]:
    """Pronounceable made-up words (FTS5 tokenises them like real ones)."""
    consonants, vowels = list("bdfgklmnprstvz"), list("aeiou")
    words: set[str] = set()
    while len(words) < n:
        syl = int(rng.integers(2, 4))
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syl)))
    return sorted(words)


def make_corpus(rng: np.random.Generator, vocab: Sequence[str], n: int, dim: int,
                centroids: Vectors, words: int = 60) -> Corpus:
    """`n` rows: Zipf-distributed words; vectors scattered around topic centroids."""
    ranks = np.minimum(rng.zipf(1.3, size=(n, words)) - 1, len(vocab) - 1)
    texts = [" ".join(vocab[r] for r in row) for row in ranks]
    topic = rng.integers(0, len(centroids), size=n)
    vecs = centroids[topic] + rng.normal(0, 0.6 / math.sqrt(dim), size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return Corpus(texts, vecs.astype(np.float32), frozenset(vocab[:FUNCTION_WORDS]))


async def insert_rows(db: Database, person: Person, channel: Channel, corpus: Corpus,
                      rng: np.random.Generator, chunk: int = 5000) -> list[int]:
    """Bulk-insert message rows (FTS via trigger on SQLite), their owner-partitioned vectors,
    and the row indexer's cursor past them: what a chat of `len(corpus.texts)` turns leaves
    behind. Portable SQL in batches of `chunk` rows, so it fills either engine; returns the
    rows' ids in order."""
    n = len(corpus.texts)
    sessions = max(1, n // SESSION_TURNS)
    starts = np.sort(rng.uniform(0, SPAN_DAYS, size=sessions))[::-1]
    ids: list[int] = []
    for begin in range(0, n, chunk):
        stop = min(n, begin + chunk)
        rows = []
        for i in range(begin, stop):
            s_index = min(i // SESSION_TURNS, sessions - 1)
            ts = to_iso(NOW - timedelta(days=float(starts[s_index]))
                        + timedelta(seconds=30 * (i % SESSION_TURNS)))
            user = i % 2 == 0
            rows.append((channel.id, channel.owner_id, person.id if user else None, ts,
                         "user" if user else "assistant", corpus.texts[i], f"t{i}"))
        async with db.write() as conn:
            last = ids[-1] if ids else 0
            await conn.executemany(
                "INSERT INTO transcript (channel_id, owner_id, person_id, ts, source, role,"
                " kind, content, turn_id) VALUES (?, ?, ?, ?, 'user', ?, 'message', ?, ?)", rows)
            cur = await conn.execute(
                "SELECT id FROM transcript WHERE channel_id = ? AND id > ? ORDER BY id",
                (channel.id, last))
            new = [int(r[0]) for r in await cur.fetchall()]
            assert len(new) == stop - begin, "another writer in the bench's channel"
            await conn.executemany(
                "INSERT INTO transcript_vec (row_id, owner_id, embedding) VALUES (?, ?, ?)",
                [(rid, channel.owner_id, corpus.vectors[i].astype("<f4").tobytes())
                 for rid, i in zip(new, range(begin, stop), strict=True)])
            await conn.execute(
                "INSERT INTO transcript_vec_cursors (channel_id, last_row_id) VALUES (?, ?)"
                " ON CONFLICT (channel_id) DO UPDATE SET last_row_id = excluded.last_row_id",
                (channel.id, new[-1]))
            ids += new
    return ids


class PrecomputedEmbedder:
    """`strata.core.ports.Embedder` answering from a table of precomputed query vectors."""

    def __init__(self, table: dict[str, Vectors], dim: int) -> None:
        self._table = table
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> list[Vectors | None]:
        return [self._table[t].astype(np.float32) for t in texts]


def pct(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3)


def stats(ms: Sequence[float]) -> dict[str, float]:
    return {"p50_ms": pct(ms, 50), "p95_ms": pct(ms, 95), "mean_ms": round(float(np.mean(ms)), 3)}


async def build(path: Path, args: argparse.Namespace, size: int, rng: np.random.Generator,
                ) -> tuple[Database, Person, Channel, Corpus]:
    db = await Database.open(path, args.dim)
    persons, channels = PersonRepo(db), ChannelRepo(db)
    vocab = vocabulary(rng)
    centroids = rng.normal(size=(200, args.dim)).astype(np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    target: tuple[Person, Channel, Corpus] | None = None
    for p in range(args.people):
        person = await persons.get_or_create(f"bench:{p}", f"person{p}", NOW)
        channel = await channels.get_or_create(
            platform="bench", room_ref=str(p), owner_id=person.id, kind=ChannelKind.PRIVATE,
            source="user", now=NOW)
        corpus = make_corpus(rng, vocab, size if p == 0 else args.others, args.dim, centroids,
                             words=ROW_WORDS)
        await insert_rows(db, person, channel, corpus, rng)
        if p == 0:
            target = (person, channel, corpus)
    assert target is not None
    await db.checkpoint()
    return db, *target


def make_queries(rng: np.random.Generator, corpus: Corpus, n: int) -> list[tuple[str, Vectors]]:
    """Noisy copies of random rows: a few of their content words, their vector plus noise."""
    out = []
    dim = corpus.vectors.shape[1]
    for k, i in enumerate(rng.integers(0, len(corpus.texts), size=n)):
        words = [w for w in corpus.texts[int(i)].split() if w not in corpus.function_words]
        words = words or corpus.texts[int(i)].split()
        picked = rng.choice(len(words), size=min(6, len(words)), replace=False)
        text = f"q{k} what about " + " ".join(words[j] for j in sorted(picked))
        vec = corpus.vectors[int(i)] + rng.normal(0, 0.8 / math.sqrt(dim), size=dim)
        out.append((text, (vec / np.linalg.norm(vec)).astype(np.float32)))
    return out


async def time_vec_knn(db: Database, owner_id: int, queries: Sequence[tuple[str, Vectors]]
                       ) -> list[float]:
    out = []
    for _, vec in queries:
        start = time.perf_counter()
        await db.fetchall(
            "SELECT row_id, distance FROM transcript_vec WHERE embedding MATCH ? AND k = ?"
            " AND owner_id = ?", (vec.astype("<f4").tobytes(), TOP_K, owner_id))
        out.append((time.perf_counter() - start) * 1000)
    return out


def time_numpy(vectors: Vectors, queries: Sequence[tuple[str, Vectors]]) -> list[float]:
    out = []
    for _, vec in queries:
        start = time.perf_counter()
        sims = vectors @ vec
        top = np.argpartition(-sims, min(TOP_K, len(sims) - 1))[:TOP_K]
        top[np.argsort(-sims[top])]
        out.append((time.perf_counter() - start) * 1000)
    return out


async def time_recall(recall: Recall, person: Person, queries: Sequence[tuple[str, Vectors]]
                      ) -> tuple[list[float], float]:
    """The real turn-zero recall search (default tuning); latencies and mean items injected."""
    out, items = [], 0
    for text, vec in queries:
        start = time.perf_counter()
        result = await recall.search(person.id, text, NOW, vector=vec)
        out.append((time.perf_counter() - start) * 1000)
        items += len(result.items)
    return out, items / max(len(queries), 1)


async def run_size(args: argparse.Namespace, size: int) -> dict[str, Any]:
    rng = np.random.default_rng(args.seed + size)
    with tempfile.TemporaryDirectory(prefix="strata-bench-") as tmp:
        t0 = time.perf_counter()
        db, person, channel, corpus = await build(Path(tmp) / "bench.db", args, size, rng)
        build_s = time.perf_counter() - t0
        try:
            queries = make_queries(rng, corpus, args.queries)
            # Warm the page cache and the prepared statements the way a running bot has them.
            await time_vec_knn(db, channel.owner_id, queries[:5])
            time_numpy(corpus.vectors, queries[:5])
            result: dict[str, Any] = {
                "memories": size,
                "people": args.people,
                "other_people_memories_each": args.others,
                "queries": len(queries),
                "build_seconds": round(build_s, 1),
            }
            reads = RecallReads(db, episodes=EpisodeRepo(db), transcript=TranscriptRepo(db))
            recall = Recall(reads, PrecomputedEmbedder(dict(queries), args.dim),
                            ManualClock(NOW), RecallTuning())
            try:
                start = time.perf_counter()
                await recall.index.table(person.id)  # the person's first search loads them
                result["index_build_ms"] = round((time.perf_counter() - start) * 1000, 1)
                await time_recall(recall, person, queries[:5])
                recall_ms, items = await time_recall(recall, person, queries)
            finally:
                await recall.close()
            result["recall"] = stats(recall_ms)
            result["recall_mean_items"] = round(items, 1)
            result["vec_knn"] = stats(await time_vec_knn(db, channel.owner_id, queries))
            result["numpy_floor"] = stats(time_numpy(corpus.vectors, queries))
        finally:
            await db.close()
    return result


def table(results: Sequence[dict[str, Any]]) -> str:
    lines = [f"{'memories':>9} {'recall p50':>11} {'p95':>8} {'vec kNN p50':>12} {'p95':>8}"
             f" {'numpy p50':>10} {'p95':>8}"]
    for r in results:
        rec = r["recall"]
        lines.append(
            f"{r['memories']:>9} {rec['p50_ms']:>11.2f} {rec['p95_ms']:>8.2f}"
            f" {r['vec_knn']['p50_ms']:>12.2f} {r['vec_knn']['p95_ms']:>8.2f}"
            f" {r['numpy_floor']['p50_ms']:>10.3f} {r['numpy_floor']['p95_ms']:>8.3f}")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results = []
    for size in sizes:
        print(f"building {size} memories (+{args.people - 1} people × {args.others}) …",
              file=sys.stderr, flush=True)
        results.append(await run_size(args, size))
    return {
        "benchmark": "turn-zero recall latency",
        "command": "python bench/recall_latency.py " + " ".join(sys.argv[1:]),
        "dim": args.dim,
        "top_k": TOP_K,
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count(),
                    "platform": platform.platform()},
        "results": results,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Turn-zero recall latency benchmark.")
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="memories (rows) of the measured person, comma-separated")
    parser.add_argument("--people", type=int, default=50)
    parser.add_argument("--others", type=int, default=1000,
                        help="memories (rows) of each other person")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args(argv)
    if args.people < 1 or args.queries < 1:
        parser.error("--people and --queries must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = asyncio.run(main_async(args))
    print(table(report["results"]))
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
