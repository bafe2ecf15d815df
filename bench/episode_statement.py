"""What a warm search's episode statement costs, part by part, on both engines: the whole
statement (`RecallReads.found_query`: the vector kNN and the keyword search joined to the live
episodes' details), each search with its details, and each search alone. Tells whether keeping
a person's episode vectors in memory would make it cheaper (it would not where the keyword
search and the details cost more than the kNN's scan).

The store is bench/engines.py's (`--persons` people × `--memories` rows, 384-d, with their
episodes); each figure is the median of `--runs` runs of one query per person. The load
average is recorded.

    python bench/episode_statement.py --out bench/results/episode_statement.json
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import engines, stores  # noqa: E402
from strata.memory.engines.db import Database  # noqa: E402
from strata.memory.store.episodes import as_blob  # noqa: E402
from strata.memory.store.recall_reads import EpisodeSearch  # noqa: E402


async def median_ms(db: Database, sql: str, params: list[Any], runs: int) -> float:
    ms = []
    for _ in range(runs):
        w0 = time.perf_counter()
        await db.fetchall(sql, params)
        ms.append((time.perf_counter() - w0) * 1000)
    return float(np.median(ms))


async def parts(store: engines.Store, queries: list[Any], dim: int,
                runs: int) -> dict[str, Any]:
    """Per part, the mean over people of each person's median, in ms."""
    recall = engines.bot_recall(store.db, {t: v for q in queries for t, v in q.queries}, dim)
    reads, dialect, db = recall.reads, store.db.dialect, store.db
    k, scan = recall.tuning.candidates, recall.tuning.keyword_scan
    got: dict[str, list[float]] = {}
    episodes = []
    try:
        for person, q in zip(store.persons, queries, strict=False):
            owner, (text, vector) = person.id, q.queries[1]
            match = reads.keyword_query(text)
            search = EpisodeSearch(owner, vector, match, k * 3, scan, k)
            whole = {"statement": search, "knn_with_details": dataclasses.replace(
                search, match=None), "keyword_with_details": dataclasses.replace(
                search, vector=None)}
            for name, s in whole.items():
                got.setdefault(name, []).append(
                    await median_ms(db, *reads.found_query(s), runs))
            alone = {
                "knn_alone": (dialect.knn_sql("episode_vec", "episode_id"),
                              [as_blob(vector), owner, k * 3]),
                "keyword_alone": (dialect.episode_search, [
                    dialect.scoped(match, owner, ("summary", "key_terms")), scan, owner, k]),
            }
            for name, (sql, params) in alone.items():
                got.setdefault(name, []).append(await median_ms(db, sql, params, runs))
            episodes.append(int(await db.fetchval(
                "SELECT count(*) FROM episodes WHERE owner_id = ?", (owner,))))
            got.setdefault("episodes_found", []).append(
                len(await reads.found_episodes(search)))
    finally:
        await recall.close()
    return {"episodes_per_person": episodes,
            **{name: round(float(np.mean(v)), 3) for name, v in got.items()}}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"benchmark": "bench/episode_statement.py", "command": args.argv,
                           "persons": args.persons, "memories": args.memories,
                           "runs": args.runs, "engines": {}}
    for engine in args.engines:
        out["engines"][engine] = {"load_average": round(os.getloadavg()[0], 2)}
        async with stores.engine_store(engine, args.persons, args.memories, 2) as (
                store, queries, dim):
            out["engines"][engine].update(await parts(store, queries, dim, args.runs))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--persons", type=int, default=3)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--engines", default="sqlite,postgres")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    args.engines = args.engines.split(",")
    args.argv = " ".join(["python", "bench/episode_statement.py", *sys.argv[1:]])
    out = asyncio.run(main_async(args))
    print(json.dumps(out["engines"], indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
