"""Where a recall search's time goes: a profile of warm searches and of a person's first one.

The store is bench/engines.py's (SQLite, `--persons` people × `--memories` rows, 384-d); the
searches are `Recall.search` as the bot builds it. Printed: the engine's own statements that
recall's candidate sources run (episode and fact kNN, the row index's freshness check), timed
alone, then cProfile's top entries (cumulative time) of `--searches` warm searches and of one
first search of another person (`--cpu`: in CPU time, steadier on a shared machine).

    python bench/recall_profile.py
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import engines  # noqa: E402
from strata.memory.store.episodes import as_blob  # noqa: E402


async def main_async(args: argparse.Namespace) -> None:
    async with engines.sqlite_store(args.persons, args.memories, args.searches) as (
            store, queries, dim):
        db = store.db
        owner, pq = store.persons[0].id, queries[0]
        for table, key, k in (("episode_vec", "episode_id", 120), ("fact_vec", "fact_id", 40)):
            sql = db.dialect.knn_sql(table, key)
            ms = []
            for _, vec in pq.queries:
                start = time.perf_counter()
                await db.fetchall(sql, (as_blob(vec), owner, k))
                ms.append((time.perf_counter() - start) * 1000)
            print(f"{table} kNN (k = {k}): median {sorted(ms)[len(ms) // 2]:.2f} ms")
        recall = engines.bot_recall(db, {t: v for q in queries for t, v in q.queries}, dim)
        try:
            text, vec = pq.queries[0]
            await recall.search(owner, text, engines.NOW, vector=vec)  # the cold one
            timer = time.process_time if args.cpu else time.perf_counter
            warm = cProfile.Profile(timer)
            warm.enable()
            for text, vec in pq.queries:
                await recall.search(owner, text, engines.NOW, vector=vec)
            warm.disable()
            print(f"\n{len(pq.queries)} warm searches:")
            pstats.Stats(warm).sort_stats("cumulative").print_stats(r"strata/memory/", args.top)
            cold = cProfile.Profile(timer)
            cold.enable()
            await recall.search(store.persons[1].id, text, engines.NOW, vector=vec)
            cold.disable()
            print("\na person's first search:")
            pstats.Stats(cold).sort_stats("cumulative").print_stats(r"strata/memory/", args.top)
        finally:
            await recall.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--persons", type=int, default=2)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=30)
    parser.add_argument("--top", type=int, default=15, help="profile entries printed")
    parser.add_argument("--cpu", action="store_true",
                        help="profile the process's CPU time (all threads), not the wall clock:"
                        " steadier when other jobs share the cores")
    asyncio.run(main_async(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
