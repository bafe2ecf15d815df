"""What the hypothetical turn (`strata.bot.hypothetical`, `[recall] hypothetical`) costs a
turn: the time the chat model takes to write one question's line, with the embedded default
(Qwen2.5-Coder-0.5B through llama.cpp, one thread) unless a model server is configured.
The first line also loads the model; it is timed apart. Writes the lines, each one's seconds,
p50 / p95 and the load average beside them, as JSON.

    python bench/hypothetical_latency.py --questions DIR/questions.jsonl --n 40 \
        --out bench/results/hypothetical_latency.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.report import write_report  # noqa: E402
from strata.app.compose import App  # noqa: E402
from strata.bot.embedded import model_endpoints  # noqa: E402
from strata.bot.hypothetical import HypotheticalTurn, asks  # noqa: E402
from strata.core.config import load_settings  # noqa: E402


def questions(path: Path, n: int) -> list[str]:
    seen: dict[str, None] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)["question"].strip()
        if asks(q):
            seen.setdefault(q)
        if len(seen) >= n + 1:
            break
    return list(seen)


async def main_async(args: argparse.Namespace) -> dict[str, object]:
    asked = questions(Path(args.questions), args.n)
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "STRATA_DB": str(Path(folder) / "bench.db")}
        settings = load_settings(None, env=env)
        async with model_endpoints(settings, cache_dir=Path(folder) / "models",
                                   notice=lambda text: None) as served:
            app = await App.create(served)
            try:
                writer = HypotheticalTurn(lambda _owner: app.chat, seconds=600)
                started = time.perf_counter()
                await writer.line(0, asked[0])  # loads the model
                load_s = time.perf_counter() - started
                rows = []
                for q in asked[1:]:
                    started = time.perf_counter()
                    line = await writer.line(1, q)
                    rows.append({"question": q, "line": line,
                                 "seconds": round(time.perf_counter() - started, 3)})
            finally:
                await app.close()
    secs = np.array([r["seconds"] for r in rows], dtype=float)
    return {"model": served.llm.model, "first_line_with_load_s": round(load_s, 2),
            "lines": len(rows), "p50_s": round(float(np.percentile(secs, 50)), 3),
            "p95_s": round(float(np.percentile(secs, 95)), 3),
            "mean_s": round(float(secs.mean()), 3), "loadavg": os.getloadavg(),
            "cpus": os.cpu_count(), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", required=True)
    parser.add_argument("--n", type=int, default=40, help="lines timed (after the first)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    result = {"command": "python bench/hypothetical_latency.py " + " ".join(sys.argv[1:]),
              **asyncio.run(main_async(args))}
    print(f"{result['lines']} lines: p50 {result['p50_s']} s, p95 {result['p95_s']} s, "
          f"load average {result['loadavg']}")
    write_report(args.out, result)


if __name__ == "__main__":
    main()
