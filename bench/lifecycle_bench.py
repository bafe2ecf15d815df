"""Life-cycle benchmarks (not tests): one roll-up round over 1,000 apexes, and the decay pass
(weights + janitor + pruning) over a 1-million-row transcript. Each writes a JSON file to
bench/results/ and prints it. Run each in its own process so peak memory is its own:

    python bench/lifecycle_bench.py rollup     # bench/results/rollup_1000.json
    python bench/lifecycle_bench.py prune      # bench/results/prune_decay_1m.json

The model and embeddings come from the fake OpenAI-compatible server on 127.0.0.1 (so the
figures are Strata's own work, not a model's latency). Embedding dimension 768 (the default).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import resource
import sys
import tempfile
import time
import uuid
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.report import write_report  # noqa: E402
from strata.bot.llm import OpenAIChatModel, OpenAIEmbedder  # noqa: E402
from strata.bot.writers.rollup import rollup_channel  # noqa: E402
from strata.core.clock import to_iso  # noqa: E402
from strata.core.types import ChannelKind  # noqa: E402
from strata.memory.engines.db import Database  # noqa: E402
from strata.memory.lifecycle.clustering import cluster_labels  # noqa: E402
from strata.memory.lifecycle.passes import MemoryLifecycle  # noqa: E402
from strata.memory.store.episodes import EpisodeRepo, NewEpisode, as_blob  # noqa: E402
from strata.memory.store.forgetting.janitor import decay_pass, recompute_weights  # noqa: E402
from strata.memory.store.lifecycle import LifecycleStore  # noqa: E402
from strata.memory.store.persons import ChannelRepo, PersonRepo  # noqa: E402
from strata.memory.store.refusals import RefusalRepo  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402

DIM = 768
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
RESULTS = ROOT / "bench" / "results"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def machine() -> dict[str, Any]:
    import os

    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "platform": platform.platform()}


def write(name: str, data: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    data["machine"] = machine()
    print(json.dumps(data, indent=2))
    write_report(RESULTS / f"{name}.json", data)


def topic_vectors(n: int, topics: int, noise: int, seed: int = 0) -> np.ndarray:
    """`n` unit vectors: `topics` groups of random sizes plus `noise` scattered points."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, DIM))
    sizes = rng.multinomial(n - noise, np.ones(topics) / topics)
    parts = [centres[i] + 0.35 * rng.normal(size=(s, DIM)) for i, s in enumerate(sizes)]
    parts.append(rng.normal(size=(noise, DIM)))
    x = np.vstack(parts)
    x = x[rng.permutation(len(x))]
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


async def bench_rollup(n: int) -> dict[str, Any]:
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(dim=DIM) as fake:
        fake.responder = lambda body: json.dumps({"summary": "a topic", "key_terms": ["t"]})
        db = await Database.open(Path(tmp) / "bench.db", DIM)
        chat = OpenAIChatModel(base_url=fake.base_url, model=fake.model, api_key="x")
        embedder = OpenAIEmbedder(base_url=fake.base_url, model=fake.embed_model, dim=DIM,
                                  api_key="x")
        try:
            person = await PersonRepo(db).get_or_create("console:bench", "bench", NOW)
            channel = await ChannelRepo(db).get_or_create(
                platform="console", room_ref="bench", owner_id=person.id,
                kind=ChannelKind.PRIVATE, source="user", now=NOW)
            vecs = topic_vectors(n, topics=40, noise=n // 10)
            repo = EpisodeRepo(db)
            for i, v in enumerate(vecs):
                await repo.insert(NewEpisode(person.id, channel.id, f"leaf {i}", "user", NOW,
                                             NOW, ()), v, NOW)
            rss_before_warmup = peak_rss_mb()
            t = time.perf_counter()
            cluster_labels(topic_vectors(60, topics=3, noise=0, seed=1))  # JIT warm-up
            warmup = time.perf_counter() - t
            rss_after_warmup = peak_rss_mb()
            t = time.perf_counter()
            labels = cluster_labels(vecs)
            clustering = time.perf_counter() - t
            t = time.perf_counter()
            store = LifecycleStore(db, repo, RefusalRepo(db))
            result = await rollup_channel(MemoryLifecycle(store, embedder), chat,
                                          channel.id, 0, NOW)
            full = time.perf_counter() - t
        finally:
            await chat.close()
            await embedder.close()
            await db.close()
    return {
        "benchmark": f"roll-up round over {n} apex leaves (dim {DIM})",
        "command": "python bench/lifecycle_bench.py rollup",
        "warmup_seconds": round(warmup, 2),
        "clustering_seconds": round(clustering, 2),
        "round_seconds": round(full, 2),
        "round_includes": "load embeddings, UMAP+HDBSCAN, one summary call and one embedding "
                          "call per cluster (fake local server), parent writes, tombstones",
        "clusters": result.clusters,
        "parents": len(result.parents),
        "tombstoned": result.tombstoned,
        "noise": result.noise,
        "same_labels_as_bare_clustering": int((labels >= 0).sum()) == result.tombstoned,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "rss_before_warmup_mb": round(rss_before_warmup, 1),
        "rss_after_warmup_mb": round(rss_after_warmup, 1),
    }


async def build_transcript(db: Database, rows_total: int, channels: int) -> dict[str, int]:
    """A transcript of `rows_total` rows over `channels` channels of one person: turns of a
    user message and a reply (every 10th turn with a tool call and result), leaf episodes over
    windows of 10 turns (one in three live, one in three tombstoned 40 days ago), vectors for
    every 20th row, a compaction covering 90% of each channel, the episode cursor at 95%."""
    rnd = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    person = await PersonRepo(db).get_or_create("console:bulk", "bulk", NOW)
    per_channel = rows_total // channels
    stats = {"rows": 0, "episodes": 0, "vectors": 0}
    vec = as_blob(np.full(DIM, 1 / np.sqrt(DIM), dtype=np.float32))
    old = to_iso(NOW - timedelta(days=40))
    ts = to_iso(NOW - timedelta(days=60))
    for c in range(channels):
        channel = await ChannelRepo(db).get_or_create(
            platform="console", room_ref=f"bulk/{c}", owner_id=person.id,
            kind=ChannelKind.PRIVATE, source="user", now=NOW)
        first = int(await db.fetchval("SELECT coalesce(max(id), 0) FROM transcript")) + 1
        rows: list[tuple[Any, ...]] = []
        turns: list[list[int]] = []
        next_id = first
        turn_no = 0
        while len(rows) < per_channel:
            tid = uuid.uuid4().hex
            kinds = [("user", "message"), ("assistant", "message")]
            if turn_no % 10 == 0:
                kinds[1:1] = [("assistant", "tool_call"), ("tool", "tool_result")]
            ids = []
            for role, kind in kinds:
                text = " ".join(rnd.choices(words, k=12))
                rows.append((next_id, channel.id, person.id, ts, "user", role, kind, text, tid))
                ids.append(next_id)
                next_id += 1
            turns.append(ids)
            turn_no += 1
        for start in range(0, len(rows), 50_000):
            async with db.write() as conn:
                await conn.executemany(
                    "INSERT INTO transcript (id, channel_id, owner_id, ts, source, role, kind,"
                    " content, turn_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows[start:start + 50_000])
        last = next_id - 1
        stats["rows"] += len(rows)
        async with db.write() as conn:
            await conn.executemany(
                "INSERT INTO transcript_vec (row_id, owner_id, embedding) VALUES (?, ?, ?)",
                [(i, person.id, vec) for i in range(first, last + 1, 20)])
            stats["vectors"] += len(range(first, last + 1, 20))
            for w, start in enumerate(range(0, len(turns), 10)):
                if w % 3 == 2:
                    continue
                cur = await conn.execute(
                    "INSERT INTO episodes (owner_id, channel_id, summary, source, started_at,"
                    " ended_at, created_at, last_relevant_at, tombstoned_at)"
                    " VALUES (?, ?, 'e', 'user', ?, ?, ?, ?, ?)",
                    (person.id, channel.id, ts, ts, ts, ts, old if w % 3 == 1 else None))
                eid = cur.lastrowid
                await conn.executemany(
                    "INSERT INTO episode_rows (episode_id, row_id) VALUES (?, ?)",
                    [(eid, r) for t in turns[start:start + 10] for r in t])
                await conn.execute(
                    "INSERT INTO episode_vec (episode_id, owner_id, embedding) VALUES (?, ?, ?)",
                    (eid, person.id, vec))
                stats["episodes"] += 1
            covers = first + int(0.9 * (last - first))
            await conn.execute(
                "INSERT INTO transcript (channel_id, owner_id, ts, source, role, kind, content,"
                " turn_id, covers_to) VALUES (?, ?, ?, 'compaction', 'system', 'compaction',"
                " 'summary', ?, ?)",
                (channel.id, person.id, to_iso(NOW), uuid.uuid4().hex, covers))
            await conn.execute(
                "INSERT INTO episode_cursors (channel_id, last_row_id) VALUES (?, ?)",
                (channel.id, first + int(0.95 * (last - first))))
    return stats


async def bench_prune(rows_total: int, channels: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=ROOT / "bench") as tmp:
        db = await Database.open(Path(tmp) / "bench.db", DIM)
        try:
            t = time.perf_counter()
            stats = await build_transcript(db, rows_total, channels)
            setup = time.perf_counter() - t
            t = time.perf_counter()
            result = await decay_pass(db, NOW)
            seconds = time.perf_counter() - t
            # Phases of a pass, and a steady-state pass (nothing new to delete) right after.
            t = time.perf_counter()
            await recompute_weights(db, NOW + timedelta(days=1))
            weights_s = time.perf_counter() - t
            t = time.perf_counter()
            again = await decay_pass(db, NOW + timedelta(days=1))
            steady = time.perf_counter() - t
            left = int(await db.fetchval("SELECT count(*) FROM transcript"))
            fts_left = int(await db.fetchval("SELECT count(*) FROM transcript_fts_docsize"))
            size_mb = (Path(tmp) / "bench.db").stat().st_size / 2**20
        finally:
            await db.close()
    return {
        "benchmark": f"decay pass over a {stats['rows']:,}-row transcript "
                     f"({channels} channels, {stats['episodes']:,} episodes, "
                     f"{stats['vectors']:,} row vectors, dim {DIM})",
        "command": "python bench/lifecycle_bench.py prune",
        "setup_seconds": round(setup, 1),
        "decay_pass_seconds": round(seconds, 2),
        "decay_pass_includes": "first pass: weights, janitor (tombstones > 30 d), pruning of "
                               "every row below the watermarks at once",
        "steady_state_pass_seconds": round(steady, 2),
        "steady_state_rows_pruned": again.rows_pruned,
        "weights_only_seconds": round(weights_s, 2),
        "weights_updated": result.weights_updated,
        "tombstones_deleted": result.episodes_deleted,
        "rows_pruned": result.rows_pruned,
        "tool_rows_pruned": sum(p.tool_rows_deleted for p in result.pruned),
        "vectors_pruned": sum(p.vectors_deleted for p in result.pruned),
        "rows_left": left,
        "fts_rows_left": fts_left,
        "db_size_mb": round(size_mb, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=["rollup", "prune"])
    parser.add_argument("--apexes", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--channels", type=int, default=10)
    args = parser.parse_args()
    if args.which == "rollup":
        write(f"rollup_{args.apexes}", asyncio.run(bench_rollup(args.apexes)))
    else:
        name = "prune_decay_1m" if args.rows == 1_000_000 else f"prune_decay_{args.rows}"
        write(name, asyncio.run(bench_prune(args.rows, args.channels)))


if __name__ == "__main__":
    main()
