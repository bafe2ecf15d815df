"""The reliability suite's case registry and its result format.

A case is a named function `run(ctx) -> CaseResult`; the registry keeps them in the order the
suite runs them, with the two table columns the docs show ("what it does", "figure that must
hold"). Results serialise to `{"cases": [{"name", "figure", "ok", ...}]}` and a markdown table.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CaseResult:
    """What one case measured: `figure` is the one-line number a reader checks, `ok` whether
    it holds, `details` the raw counts behind it."""

    name: str
    figure: str
    ok: bool
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "figure": self.figure,
            "ok": self.ok,
            "seconds": round(self.seconds, 1),
            "details": self.details,
        }


@dataclass(frozen=True)
class Context:
    """What every case is given: `quick` (the CI size) and a scratch folder of its own."""

    quick: bool
    workdir: Path
    seed: int = 12


CaseFn = Callable[[Context], Awaitable[CaseResult]]


@dataclass(frozen=True)
class Case:
    name: str
    does: str
    must_hold: str
    run: CaseFn


class Registry:
    """Cases by name, in registration order."""

    def __init__(self) -> None:
        self._cases: dict[str, Case] = {}

    def case(self, name: str, does: str, must_hold: str) -> Callable[[CaseFn], CaseFn]:
        """Decorator: register `fn` as the case `name`."""

        def add(fn: CaseFn) -> CaseFn:
            if name in self._cases:
                raise ValueError(f"case {name!r} is registered twice")
            self._cases[name] = Case(name, does, must_hold, fn)
            return fn

        return add

    def order(self, names: Iterable[str]) -> None:
        """Run the cases in this order; every registered case must be named exactly once."""
        wanted = list(names)
        if sorted(wanted) != sorted(self._cases):
            raise ValueError(f"the order {wanted} does not name every case once: "
                             f"{sorted(self._cases)}")
        self._cases = {name: self._cases[name] for name in wanted}

    def names(self) -> list[str]:
        return list(self._cases)

    def get(self, name: str) -> Case:
        if name not in self._cases:
            raise KeyError(f"no case {name!r}; the cases are: {', '.join(self._cases)}")
        return self._cases[name]

    def __iter__(self) -> Any:
        return iter(list(self._cases.values()))


async def run_case(case: Case, ctx: Context) -> CaseResult:
    """Run one case; an exception is the case failing (with its last line as the figure),
    never the suite crashing."""
    started = time.monotonic()
    try:
        result = await case.run(ctx)
    except Exception as exc:  # noqa: BLE001 - suite boundary: one broken case must not hide the others
        tb = traceback.format_exc(limit=6)
        return CaseResult(case.name, f"case raised {type(exc).__name__}: {exc}"[:300], False,
                          time.monotonic() - started, {"traceback": tb})
    return CaseResult(result.name, result.figure, result.ok, time.monotonic() - started,
                      result.details)


def report(results: Iterable[CaseResult], *, quick: bool, command: str) -> dict[str, Any]:
    rows = list(results)
    return {
        "command": command,
        "quick": quick,
        "ok": all(r.ok for r in rows),
        "cases": [r.to_json() for r in rows],
    }


def validate(data: dict[str, Any]) -> None:
    """Raise ValueError unless `data` has the suite's JSON shape."""
    cases = data.get("cases")
    if not isinstance(cases, list) or not cases:
        raise ValueError("'cases' must be a non-empty list")
    for item in cases:
        if not isinstance(item, dict):
            raise ValueError("each case must be an object")
        if not isinstance(item.get("name"), str) or not item["name"]:
            raise ValueError(f"case without a name: {item!r}")
        if not isinstance(item.get("figure"), str) or not item["figure"]:
            raise ValueError(f"case {item['name']}: 'figure' must be a non-empty string")
        if not isinstance(item.get("ok"), bool):
            raise ValueError(f"case {item['name']}: 'ok' must be true or false")


def markdown(registry: Registry, results: Iterable[CaseResult]) -> str:
    """The table for the docs: case, what it does, the figure that must hold, measured, ok."""
    lines = [
        "| case | what it does | figure that must hold | measured | ok |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        case = registry.get(r.name)
        measured = r.figure.replace("|", "/")
        mark = "✓" if r.ok else "✗"
        lines.append(f"| `{r.name}` | {case.does} | {case.must_hold} | {measured} | {mark} |")
    return "\n".join(lines) + "\n"


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
