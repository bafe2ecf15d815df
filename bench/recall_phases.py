"""Where a recall search's time goes, per phase, on both engines: wall and CPU time, and the
statements each search runs, for a person's first search and their warm ones.

The store is bench/engines.py's (`--persons` people × `--memories` rows, 384-d, facts and
episodes); the searches are `Recall.search` as the bot builds it, with the query's vector given.
Per search: wall time, the process's CPU time (every thread: the reader threads run SQLite's
statements) and the statements (bench/recall_statements.py). A first search is a person's first
in a process, reading the prepared table an earlier recall stored (`first_ever_ms`: those first
searches ever, which read every row). Per phase (the awaited parts run side by side, so their
wall times overlap): wall time and the event loop thread's CPU time. Then each statement of one
warm search run again alone, one at a time (median of 20): what it costs without the others
beside it. On a shared machine read the CPU times and the statement counts; the load average is
recorded.

    python bench/recall_phases.py --out bench/results/recall_phases.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import engines, stores  # noqa: E402
from bench.recall_statements import Statements  # noqa: E402
from strata.memory.engines.db import Database  # noqa: E402
from strata.memory.recall import search as recall_search  # noqa: E402
from strata.memory.recall.search import Recall  # noqa: E402

PURE = ("window_scores", "gate_opens", "window_units", "shares_for", "pack", "quotable")
Timings = dict[str, list[float]]  # phase -> [wall s, thread CPU s, calls]


def timed(into: Timings, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (a function or a coroutine function) adding its time to `into[name]`."""
    def add(w0: float, c0: float) -> None:
        slot = into.setdefault(name, [0.0, 0.0, 0.0])
        slot[0] += time.perf_counter() - w0
        slot[1] += time.thread_time() - c0
        slot[2] += 1

    if asyncio.iscoroutinefunction(fn):
        async def waited(*args: Any, **kwargs: Any) -> Any:
            w0, c0 = time.perf_counter(), time.thread_time()
            try:
                return await fn(*args, **kwargs)
            finally:
                add(w0, c0)
        return waited

    def called(*args: Any, **kwargs: Any) -> Any:
        w0, c0 = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            add(w0, c0)
    return called


def watch_phases(recall: Recall, into: Timings) -> Callable[[], None]:
    """Time the parts of `Recall._search` (the pure steps are looked up in its module);
    return what puts the module's own back."""
    kept = {name: getattr(recall_search, name) for name in PURE}
    for name, fn in kept.items():
        setattr(recall_search, name, timed(into, name, fn))
    recall.index.table = timed(into, "row index (freshness, load)",  # type: ignore[method-assign]
                               recall.index.table)
    recall.index.texts = timed(into, "texts of chosen rows",  # type: ignore[method-assign]
                               recall.index.texts)
    recall.leaves.citations = timed(into, "live leaves",  # type: ignore[method-assign]
                                    recall.leaves.citations)
    for source in recall.sources:
        source.candidates = timed(into, f"{source.kind} source",  # type: ignore[method-assign]
                                  source.candidates)

    def restore() -> None:
        for name, fn in kept.items():
            setattr(recall_search, name, fn)
    return restore


async def searches(recall: Recall, store: engines.Store, queries: list[Any], first: bool,
                   statements: Statements, phases: Timings) -> dict[str, Any]:
    """Each person's first search (`first`) or their warm ones: per-search figures and the
    phases' means."""
    phases.clear()
    wall, cpu, counted = [], [], []
    for p, pq in enumerate(queries):
        for text, vec in pq.queries[:1] if first else pq.queries:
            statements.count = 0
            w0, c0 = time.perf_counter(), time.process_time()
            await recall.search(store.persons[p].id, text, engines.NOW, vector=vec)
            wall.append((time.perf_counter() - w0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            counted.append(statements.count)
    n = len(wall)
    return {"searches": n, "wall_p50_ms": round(float(np.percentile(wall, 50)), 2),
            "wall_p95_ms": round(float(np.percentile(wall, 95)), 2),
            "cpu_mean_ms": round(float(np.mean(cpu)), 2),
            "statements": round(float(np.mean(counted)), 2),
            "load_average": round(os.getloadavg()[0], 2),
            "phases": {k: {"wall_ms": round(v[0] / n * 1000, 2),
                           "thread_cpu_ms": round(v[1] / n * 1000, 2),
                           "calls": round(v[2] / n, 2)}
                       for k, v in sorted(phases.items(), key=lambda kv: -kv[1][0])}}


async def alone(db: Database, recall: Recall, owner: int, query: tuple[str, Any]
                ) -> list[dict[str, Any]]:
    """Each statement of one warm search, run again alone (median of 20)."""
    seen: list[tuple[str, Any, tuple[Any, ...]]] = []
    inside: contextvars.ContextVar[bool] = contextvars.ContextVar("inside", default=False)

    def capture(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def read(sql: str, *args: Any) -> Any:
            if inside.get():  # the pool handing a server engine's read to the database
                return await fn(sql, *args)
            seen.append((fn.__name__, sql, args))
            token = inside.set(True)
            try:
                return await fn(sql, *args)
            finally:
                inside.reset(token)
        return read

    targets = [db, recall.reads.pool]
    saved = [(t, name, getattr(t, name)) for t in targets for name in ("fetchall", "fetchone",
                                                                       "fetchval")
             if hasattr(t, name)]
    for t, name, fn in saved:
        setattr(t, name, capture(fn))
    try:
        await recall.search(owner, query[0], engines.NOW, vector=query[1])
    finally:
        for t, name, fn in saved:
            setattr(t, name, fn)
    out = []
    for name, sql, args in seen:
        ms = []
        for _ in range(20):
            w0 = time.perf_counter()
            await getattr(db, name)(sql, *args)
            ms.append((time.perf_counter() - w0) * 1000)
        out.append({"ms": round(float(np.median(ms)), 3), "sql": " ".join(str(sql).split())[:90]})
    return out


async def measure(store: engines.Store, queries: list[Any], dim: int) -> dict[str, Any]:
    ever, _ = await engines.first_searches(store, queries, dim)  # stores the prepared tables
    recall = engines.bot_recall(store.db, {t: v for q in queries for t, v in q.queries}, dim)
    statements, phases = Statements(), cast(Timings, {})
    statements.watch(store.db)
    statements.watch(recall.reads.pool)
    restore = watch_phases(recall, phases)
    try:
        first = await searches(recall, store, queries, True, statements, phases)
        warm = await searches(recall, store, queries, False, statements, phases)
    finally:
        statements.close()
        restore()
    try:
        each = await alone(store.db, recall, store.persons[0].id, queries[0].queries[1])
    finally:
        await recall.close()
    return {"first_ever_ms": [round(t, 2) for t in ever], "first": first, "warm": warm,
            "warm_statements_alone": each}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"benchmark": "bench/recall_phases.py", "command": args.argv,
                           "persons": args.persons,
                           "memories": args.memories, "searches_per_person": args.searches,
                           "engines": {}}
    for engine in args.engines:
        async with stores.engine_store(engine, args.persons, args.memories,
                                        args.searches) as (store, queries, dim):
            out["engines"][engine] = await measure(store, queries, dim)
    return out


def show(out: dict[str, Any]) -> None:
    for engine, rep in out["engines"].items():
        print(f"{engine} first searches ever (ms): {rep['first_ever_ms']}")
        for kind in ("first", "warm"):
            r = rep[kind]
            print(f"{engine} {kind}: wall p50 {r['wall_p50_ms']} p95 {r['wall_p95_ms']} ms, CPU"
                  f" {r['cpu_mean_ms']} ms, {r['statements']} statements (load"
                  f" {r['load_average']})")
            for name, ph in r["phases"].items():
                print(f"    {name:30} wall {ph['wall_ms']:7.2f}  thread CPU"
                      f" {ph['thread_cpu_ms']:7.2f} ms  ({ph['calls']:g} per search)")
        print(f"{engine}, one warm search's statements alone:")
        for st in rep["warm_statements_alone"]:
            print(f"    {st['ms']:7.3f} ms  {st['sql']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--persons", type=int, default=3)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=10, help="warm searches per person")
    parser.add_argument("--engines", default="sqlite,postgres")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args(argv)
    args.argv = ["python", "bench/recall_phases.py", *(sys.argv[1:] if argv is None else argv)]
    args.engines = [e for e in args.engines.split(",") if e in engines.ENGINES]
    out = asyncio.run(main_async(args))
    show(out)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
