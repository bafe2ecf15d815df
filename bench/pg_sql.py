"""What reading a statement's `?` marks with a lexer costs (strata/memory/engines/pg/sql.py).

The statements are PostgreSQL's dialect statements (the longest the engine runs) and `IN`
lists of 1 to 500 marks (the only statements that vary with their data). Each is translated
uncached, best of `--repeat`; the floor is a bare `str.replace("?", "%s")` of the same text,
which is what translation cannot get below. Translations are cached per distinct statement,
so a statement pays this once per process.

    python bench/pg_sql.py --out bench/results/pg_sql.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from strata.memory.engines.pg import sql  # noqa: E402
from strata.memory.engines.pg.dialect import POSTGRES  # noqa: E402


def statements() -> list[str]:
    fields = ("transcript_search", "fact_search", "episode_search", "data_tables",
              "table_columns", "table_parents", "id_counters", "unique_keys")
    out = [str(getattr(POSTGRES, f)) for f in fields]
    out += [POSTGRES.knn_sql("fact_vec", "fact_id"), *POSTGRES.set_id_counter]
    out += [f"SELECT * FROM facts WHERE id IN ({', '.join('?' * n)}) AND owner_id = ?"
            for n in (1, 10, 100, 500)]
    return out


def best_ms(fn: Callable[[str], object], text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(text)
        times.append((time.perf_counter() - start) * 1000)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    lex = sql._translated.__wrapped__  # uncached: what a first sight costs
    rows = [{"chars": len(s), "lexer_ms": round(best_ms(lex, s, args.repeat), 4),
             "floor_ms": round(best_ms(lambda t: t.replace("?", "%s"), s, args.repeat), 5)}
            for s in statements()]
    report = {
        "benchmark": "python bench/pg_sql.py" + (f" --out {args.out}" if args.out else ""),
        "statements": rows,
        "lexer_ms_median": round(statistics.median(r["lexer_ms"] for r in rows), 4),
        "lexer_ms_max": max(r["lexer_ms"] for r in rows),
        "floor_ms_max": max(r["floor_ms"] for r in rows),
    }
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
