"""`python -m bench.reliability [--quick] [--only a,b] --out FILE`: run the cases, write the
JSON report to FILE and the markdown table next to it (FILE with `.md`), print the table, and
exit 1 when any case does not hold."""

from __future__ import annotations

import argparse
import asyncio
import logging
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from bench.reliability.cases import SUITE
from bench.reliability.registry import CaseResult, Context, markdown, report, run_case, write


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.reliability",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="the CI size (a few minutes)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON report to write")
    parser.add_argument("--only", default="", help="comma-separated cases to run "
                        f"(default all: {','.join(SUITE.names())})")
    parser.add_argument("--seed", type=int, default=12, help="seed of every random choice")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    return parser.parse_args(argv)


async def run(names: list[str], args: argparse.Namespace, workdir: Path) -> list[CaseResult]:
    results = []
    for name in names:
        case = SUITE.get(name)
        print(f"reliability: {name} ...", file=sys.stderr, flush=True)
        ctx = Context(quick=args.quick, workdir=workdir / name, seed=args.seed)
        ctx.workdir.mkdir(parents=True, exist_ok=True)
        result = await run_case(case, ctx)
        mark = "ok" if result.ok else "FAILED"
        print(f"reliability: {name}: {mark}: {result.figure} ({result.seconds:.0f} s)",
              file=sys.stderr, flush=True)
        results.append(result)
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or SUITE.names()
    unknown = [n for n in names if n not in SUITE.names()]
    if unknown:
        print(f"error: no case {unknown[0]!r}; the cases are: {', '.join(SUITE.names())}",
              file=sys.stderr)
        return 2
    command = "python -m bench.reliability " + shlex.join(sys.argv[1:] if argv is None else argv)
    workdir = Path(tempfile.mkdtemp(prefix="strata-reliability-"))
    try:
        # The product's own logs (tracebacks of the faults we inject) go to a file, not the
        # terminal: the table is the output.
        logging.basicConfig(filename=workdir / "suite.log", level=logging.WARNING,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
        results = asyncio.run(run(names, args, workdir))
    finally:
        if args.keep:
            print(f"reliability: scratch kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    data = report(results, quick=args.quick, command=command)
    write(args.out, data)
    table = markdown(SUITE, results)
    args.out.with_suffix(".md").write_text(table)
    print(table)
    return 0 if data["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
