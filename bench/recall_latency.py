"""Turn-zero recall latency with 1k, 10k and 100k episodes for one person among 50 people.

For each size it builds a fresh SQLite store (the real migrations, sqlite-vec and FTS5) in a
temporary folder: 50 people with a private channel each; the measured person owns `size` leaf
episodes, every other person `--others` episodes (so the owner partition has to do its job).
Texts are synthetic (Zipf-distributed words from a made-up vocabulary, so FTS5 has real work)
and vectors are clustered unit vectors; queries are noisy copies of random episodes of the
measured person (their content words: the 100 most frequent made-up words stand in for the
stopwords a real query drops), with their embeddings precomputed, so no model is needed and the
numbers are recall's own cost. In the same run, over the same vectors, it times:

- `recall`: the real turn-zero recall search (`memory.recall`, default tuning), from the query
  text to the chosen items (vector and keyword search of episodes and rows, scoring, selection);
  the query's embedding is looked up, not computed;
- `vec_knn`: the owner-partitioned sqlite-vec kNN alone (one query of recall's several);
- `numpy_floor`: a brute-force cosine scan of the person's vectors in numpy (matrix · vector,
  then top-k) — the physical floor for an exact scan on this machine.

Run from the repository root (a few minutes for all three sizes):

    python bench/recall_latency.py --out bench/results/recall_latency.json

`--sizes 50,200 --people 3 --others 20 --queries 10` makes a smoke run of a second or two.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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

from bot.clock import ManualClock, to_iso  # noqa: E402 - after the path set-up
from bot.types import Channel, ChannelKind, Person  # noqa: E402
from memory.db import Database  # noqa: E402
from memory.persons import ChannelRepo, PersonRepo  # noqa: E402
from memory.recall import Recall, RecallTuning  # noqa: E402

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SPAN_DAYS = 730
TOP_K = 40
Vectors = npt.NDArray[np.float32]


# The most frequent made-up words play the part of a language's function words, which a real
# question's keyword search drops (memory.fts.STOPWORDS): queries never use them.
FUNCTION_WORDS = 100


@dataclass
class Corpus:
    """Synthetic episode texts and vectors for one owner."""

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
    """`n` episodes: Zipf-distributed words; vectors scattered around topic centroids."""
    ranks = np.minimum(rng.zipf(1.3, size=(n, words)) - 1, len(vocab) - 1)
    texts = [" ".join(vocab[r] for r in row) for row in ranks]
    topic = rng.integers(0, len(centroids), size=n)
    vecs = centroids[topic] + rng.normal(0, 0.6 / math.sqrt(dim), size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return Corpus(texts, vecs.astype(np.float32), frozenset(vocab[:FUNCTION_WORDS]))


async def insert_episodes(db: Database, channel: Channel, corpus: Corpus,
                          rng: np.random.Generator) -> None:
    """Bulk-insert leaf episodes (rows, FTS via trigger, owner-partitioned vectors)."""
    n = len(corpus.texts)
    ages = rng.uniform(0, SPAN_DAYS, size=n)
    sal = rng.uniform(0.1, 0.9, size=n)
    for start in range(0, n, 5000):
        stop = min(n, start + 5000)
        async with db.write() as conn:
            for i in range(start, stop):
                ts = to_iso(NOW - timedelta(days=float(ages[i])))
                cur = await conn.execute(
                    "INSERT INTO episodes (owner_id, channel_id, level, summary, key_terms,"
                    " salience, source, method, started_at, ended_at, created_at,"
                    " last_relevant_at) VALUES (?, ?, 0, ?, '', ?, 'user', 'extractive',"
                    " ?, ?, ?, ?)",
                    (channel.owner_id, channel.id, corpus.texts[i], float(sal[i]),
                     ts, ts, ts, ts),
                )
                await conn.execute(
                    "INSERT INTO episode_vec (episode_id, owner_id, embedding) VALUES (?, ?, ?)",
                    (cur.lastrowid, channel.owner_id, corpus.vectors[i].astype("<f4").tobytes()),
                )


class PrecomputedEmbedder:
    """`bot.ports.Embedder` answering from a table of precomputed query vectors."""

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
        corpus = make_corpus(rng, vocab, size if p == 0 else args.others, args.dim, centroids)
        await insert_episodes(db, channel, corpus, rng)
        if p == 0:
            target = (person, channel, corpus)
    assert target is not None
    await db.checkpoint()
    return db, *target


def make_queries(rng: np.random.Generator, corpus: Corpus, n: int) -> list[tuple[str, Vectors]]:
    """Noisy copies of random episodes: a few of their content words, their vector plus noise."""
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
            "SELECT episode_id, distance FROM episode_vec WHERE embedding MATCH ? AND k = ?"
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


async def time_recall(db: Database, person: Person, queries: Sequence[tuple[str, Vectors]],
                      dim: int) -> tuple[list[float], float]:
    """The real turn-zero recall search (default tuning); latencies and mean items injected."""
    embedder = PrecomputedEmbedder(dict(queries), dim)
    recall = Recall(db, embedder, ManualClock(NOW), RecallTuning())
    out, items = [], 0
    for text, _ in queries:
        start = time.perf_counter()
        result = await recall.search(person.id, text, NOW)
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
                "episodes": size,
                "people": args.people,
                "other_people_episodes_each": args.others,
                "queries": len(queries),
                "build_seconds": round(build_s, 1),
            }
            await time_recall(db, person, queries[:5], args.dim)
            recall_ms, items = await time_recall(db, person, queries, args.dim)
            result["recall"] = stats(recall_ms)
            result["recall_mean_items"] = round(items, 1)
            result["vec_knn"] = stats(await time_vec_knn(db, channel.owner_id, queries))
            result["numpy_floor"] = stats(time_numpy(corpus.vectors, queries))
        finally:
            await db.close()
    return result


def table(results: Sequence[dict[str, Any]]) -> str:
    lines = [f"{'episodes':>9} {'recall p50':>11} {'p95':>8} {'vec kNN p50':>12} {'p95':>8}"
             f" {'numpy p50':>10} {'p95':>8}"]
    for r in results:
        rec = r["recall"]
        lines.append(
            f"{r['episodes']:>9} {rec['p50_ms']:>11.2f} {rec['p95_ms']:>8.2f}"
            f" {r['vec_knn']['p50_ms']:>12.2f} {r['vec_knn']['p95_ms']:>8.2f}"
            f" {r['numpy_floor']['p50_ms']:>10.3f} {r['numpy_floor']['p95_ms']:>8.3f}")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results = []
    for size in sizes:
        print(f"building {size} episodes (+{args.people - 1} people × {args.others}) …",
              file=sys.stderr, flush=True)
        results.append(await run_size(args, size))
    return {
        "benchmark": "turn-zero recall latency",
        "dim": args.dim,
        "top_k": TOP_K,
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count(),
                    "platform": platform.platform()},
        "results": results,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Turn-zero recall latency benchmark.")
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="episodes of the measured person, comma-separated")
    parser.add_argument("--people", type=int, default=50)
    parser.add_argument("--others", type=int, default=1000,
                        help="episodes of each other person")
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
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
