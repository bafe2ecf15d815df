"""What a vec0 chunk size costs: bytes for a one-vector partition, kNN time for a big one.

For each chunk size (sqlite-vec's default of 1,024 and the small ones) it builds a vec0 table
partitioned by owner like the project's, and measures

- `one_vector_partition_bytes`: the file growth per owner when many owners hold one vector each
  (`--owners` owners, at `--dim`);
- the kNN (`k = 40`, cosine, inside one owner's partition of `--size` vectors, at 384 dimensions
  as the latency benchmark uses), with and without a memory map (`PRAGMA mmap_size`, which
  `strata.memory.engines.db` sets): the thread's CPU time per query, which other processes on a busy
  machine barely disturb, and the wall time for reference.

The choice of migration 0009 (8-vector chunks, memory-mapped reads) comes from this table
(docs/living-memory.md). Run from the repository root (a minute or two):

    python bench/vec_chunks.py --out bench/results/vec_chunks.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlite_vec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.report import write_report  # noqa: E402
from strata.memory.engines.driver import sqlite_driver  # noqa: E402
from strata.memory.engines.sqlite_open import MMAP_BYTES  # noqa: E402 - after the path set-up

KNN_DIM = 384
TOP_K = 40


def connect(path: Path, mmap: bool) -> Any:
    conn = sqlite_driver().connect(str(path), isolation_level=None)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    conn.execute("PRAGMA journal_mode = WAL")
    if mmap:
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    return conn


def create(conn: Any, dim: int, chunk: int | None) -> None:
    option = f", chunk_size = {chunk}" if chunk else ""
    conn.execute(
        "CREATE VIRTUAL TABLE v USING vec0 (row_id INTEGER PRIMARY KEY, owner_id INTEGER"
        f" PARTITION KEY, embedding FLOAT[{dim}] distance_metric = cosine{option})")


def unit(rng: np.random.Generator, n: int, dim: int) -> npt.NDArray[np.float32]:
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype("<f4")


def partition_bytes(folder: Path, chunk: int | None, owners: int, dim: int) -> int:
    path = folder / f"owners_{chunk}.db"
    conn = connect(path, False)
    create(conn, dim, chunk)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    empty = path.stat().st_size
    vecs = unit(np.random.default_rng(1), owners, dim)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO v VALUES (?, ?, ?)",
                     [(i + 1, i + 1, vecs[i].tobytes()) for i in range(owners)])
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return round((path.stat().st_size - empty) / owners)


def knn_times(folder: Path, chunk: int | None, size: int, queries: int) -> dict[str, Any]:
    path = folder / f"knn_{chunk}.db"
    rng = np.random.default_rng(2)
    conn = connect(path, False)
    create(conn, KNN_DIM, chunk)
    vecs = unit(rng, size, KNN_DIM)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO v VALUES (?, 1, ?)",
                     [(i + 1, vecs[i].tobytes()) for i in range(size)])
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    qs = [q.tobytes() for q in unit(rng, queries, KNN_DIM)]
    out: dict[str, Any] = {}
    for mmap in (False, True):
        conn = connect(path, mmap)
        cpu, wall = [], []
        for i, q in enumerate([*qs[:10], *qs]):  # ten to warm the caches
            c0, w0 = time.thread_time(), time.perf_counter()
            conn.execute("SELECT row_id, distance FROM v WHERE embedding MATCH ? AND k = ?"
                         " AND owner_id = 1", (q, TOP_K)).fetchall()
            if i >= 10:
                cpu.append((time.thread_time() - c0) * 1000)
                wall.append((time.perf_counter() - w0) * 1000)
        conn.close()
        out["mmap" if mmap else "page_cache"] = {
            "cpu_ms_p50": round(float(np.percentile(cpu, 50)), 2),
            "cpu_ms_p95": round(float(np.percentile(cpu, 95)), 2),
            "wall_ms_p50": round(float(np.percentile(wall, 50)), 2),
            "wall_ms_p95": round(float(np.percentile(wall, 95)), 2),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="vec0 chunk size: bytes and kNN time.")
    parser.add_argument("--chunks", default="1024,8,16,64")
    parser.add_argument("--owners", type=int, default=50)
    parser.add_argument("--dim", type=int, default=768, help="for the bytes per partition")
    parser.add_argument("--size", type=int, default=10_000, help="vectors of the kNN owner")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="strata-chunks-") as tmp:
        for text in args.chunks.split(","):
            chunk = int(text)
            option = None if chunk == 1024 else chunk  # 1024 is vec0's default: no option
            rows.append({"chunk_size": chunk,
                         "one_vector_partition_bytes": partition_bytes(
                             Path(tmp), option, args.owners, args.dim),
                         "knn": knn_times(Path(tmp), option, args.size, args.queries)})
            k = rows[-1]["knn"]
            print(f"chunk {chunk:>5}: {rows[-1]['one_vector_partition_bytes']:>10,} B/owner"
                  f" at {args.dim}-d; kNN over {args.size} CPU p50"
                  f" {k['page_cache']['cpu_ms_p50']:.2f} ms, with mmap"
                  f" {k['mmap']['cpu_ms_p50']:.2f} ms", flush=True)
    report = {"benchmark": "vec0 chunk size", "dim_bytes": args.dim, "dim_knn": KNN_DIM,
              "knn_vectors": args.size, "top_k": TOP_K, "results": rows}
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
