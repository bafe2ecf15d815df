"""A person's recall search right after each of their turns: what the bot pays per turn.

The store is bench/engines.py's (SQLite, `--persons` people × `--memories` rows, 384-d, facts
and leaf episodes). After the person's first search, each of `--turns` turns appends one
message row and then searches, so every search finds the row table changed (the new row
joins it). Measured per search: wall time, the process's CPU time (all threads; steadier when
other jobs share the cores) and statements (bench/recall_statements.py), beside the load
average. Query vectors are precomputed.

    python bench/recall_after_turn.py --out bench/results/recall_after_turn.json
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import engines  # noqa: E402
from bench.recall_latency import stats  # noqa: E402
from bench.recall_statements import Statements  # noqa: E402
from bench.report import write_report  # noqa: E402
from strata.core.types import NewRow, Role  # noqa: E402
from strata.memory.store.transcript import TranscriptRepo  # noqa: E402


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    wall: list[float] = []
    cpu: list[float] = []
    counted: list[int] = []
    async with engines.sqlite_store(args.persons, args.memories, args.turns) as (store, qs, dim):
        db, person, ch, pq = store.db, store.persons[0], store.channels[0], qs[0]
        recall = engines.bot_recall(db, dict(pq.queries), dim)
        statements = Statements()
        try:
            text, vec = pq.queries[0]
            await recall.search(person.id, text, engines.NOW, vector=vec)  # the first
            statements.watch(db)
            statements.watch(recall.reads.pool)
            for k, (text, vec) in enumerate(pq.queries):
                await TranscriptRepo(db).append([NewRow(
                    ch.id, person.id, engines.NOW, ch.source, Role.USER, f"turn {k}: {text}",
                    uuid.uuid4().hex)])
                statements.count = 0
                start, used = time.perf_counter(), time.process_time()
                await recall.search(person.id, text, engines.NOW, vector=vec)
                wall.append((time.perf_counter() - start) * 1000)
                cpu.append((time.process_time() - used) * 1000)
                counted.append(statements.count)
        finally:
            statements.close()
            await recall.close()
    return {"benchmark": "recall search after each turn",
            "command": "python bench/recall_after_turn.py " + " ".join(args.argv),
            "searches": len(wall), "wall_ms": stats(wall), "cpu_ms": stats(cpu),
            "statements_mean": round(sum(counted) / max(len(counted), 1), 2),
            "load_average_1min": round(os.getloadavg()[0], 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--persons", type=int, default=2)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    rep = asyncio.run(measure(args))
    print(f"after a turn: wall p50 {rep['wall_ms']['p50_ms']} ms, CPU p50"
          f" {rep['cpu_ms']['p50_ms']} ms, {rep['statements_mean']} statements,"
          f" load {rep['load_average_1min']}")
    write_report(args.out, rep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
