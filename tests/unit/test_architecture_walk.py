"""docs/architecture.md's two walks are true: every step's file and function exist, the step
each row says calls it does call it (by name, in its body), and the crossings column is the
layers' real direction (`pyproject.toml`'s layers contract), with no call up in either walk.

A walk row reads `| 5 | `path.py` | `Class.method` (as `name`) | 3 | down | what |`: the
function is a dotted path in the module (methods and nested functions too); `(as `name`)` is
the name the caller calls it by when that is not its own (a port, a callback); `from` is the
calling row ("—" for where the walk starts). `room` is a call from `bot` into the walk's own
platform adapter, through the room output it handed the scheduler: the path's forward end.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "architecture.md"
WALKS = ("Walk 1: one Telegram message", "Walk 2: one job run")
ROW = re.compile(
    r"^\| (\d+) \| `([^`]+)` \| `([^`]+)`(?: \(as `([^`]+)`\))? \| (\d+|—) \| (\w+|—) \|")
TOTALS = re.compile(r"^Crossings: (\d+) down, (\d+) room, (\d+) up\.$")



@dataclass(frozen=True)
class Step:
    number: int
    path: str
    function: str
    called_as: str
    caller: int | None
    crossing: str


def _layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    return next(c["layers"] for c in contracts if c["name"] == "the layers")


def _section(title: str) -> list[str]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index(f"## {title}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def _steps(title: str) -> list[Step]:
    steps = []
    for line in _section(title):
        m = ROW.match(line)
        if m is None:
            continue
        number, path, function, alias, caller, crossing = m.groups()
        steps.append(Step(int(number), path, function, alias or function.split(".")[-1],
                          None if caller == "—" else int(caller), crossing))
    return steps


def _find(path: str, dotted: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function `dotted` (`name`, `Class.method`, `outer.inner`) in the module at `path`."""
    node: ast.AST = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    for part in dotted.split("."):
        found = [c for c in ast.iter_child_nodes(node)
                 if isinstance(c, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                 and c.name == part]
        if not found:
            return None
        node = found[0]
    return node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None


def _names_used(func: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Name):
            names.add(node.id.lstrip("_"))
        elif isinstance(node, ast.Attribute):
            names.add(node.attr.lstrip("_"))
    return names


def _layer(path: str, layers: list[str]) -> int:
    module = path.removesuffix(".py").replace("/", ".")
    return next(i for i, layer in enumerate(layers) if module.startswith(layer + "."))


def _crossing(caller: Step, callee: Step, layers: list[str]) -> str:
    here, there = _layer(caller.path, layers), _layer(callee.path, layers)
    return "same" if here == there else "down" if there > here else "up"


@pytest.mark.parametrize("title", WALKS)
def test_every_step_exists_and_its_caller_calls_it(title: str) -> None:
    steps = _steps(title)
    assert len(steps) >= 15, f"{title}: the walk's table was not found"
    assert [s.number for s in steps] == list(range(1, len(steps) + 1))
    by_number = {s.number: s for s in steps}
    problems = []
    for step in steps:
        func = _find(step.path, step.function)
        if func is None:
            problems.append(f"{step.number}: no {step.function} in {step.path}")
            continue
        if step.caller is None:
            continue
        caller = by_number[step.caller]
        caller_func = _find(caller.path, caller.function)
        if caller.number >= step.number:
            problems.append(f"{step.number}: called from a later row {caller.number}")
        elif caller_func is not None and step.called_as.lstrip("_") not in _names_used(
                caller_func):
            problems.append(f"{step.number}: {caller.function} never calls "
                            f"{step.called_as}")
    assert problems == []


@pytest.mark.parametrize("title", WALKS)
def test_the_crossings_are_the_layers_own_and_none_goes_up(title: str) -> None:
    layers = _layers()
    steps = _steps(title)
    by_number = {s.number: s for s in steps}
    platform = steps[0].path.rsplit("/", 1)[0] + "/"
    counted = {"down": 0, "room": 0, "up": 0}
    for step in steps:
        if step.caller is None:
            assert step.crossing == "—", step
            continue
        real = _crossing(by_number[step.caller], step, layers)
        if step.crossing == "room":
            # The reply reaching the chat: from bot into the adapter the walk started in.
            assert real == "up" and step.path.startswith(platform), step
        else:
            assert step.crossing == real, f"{step.number}: says {step.crossing}, is {real}"
        if real != "same":
            counted["up" if real == "up" and step.crossing != "room" else step.crossing] += 1
    totals = [TOTALS.match(line) for line in _section(title)]
    stated = [m.groups() for m in totals if m is not None]
    assert counted["up"] == 0
    assert stated == [(str(counted["down"]), str(counted["room"]), "0")]


def test_a_step_that_does_not_exist_is_caught() -> None:
    """The checks can fail: a renamed function and a wrong caller are both found."""
    assert _find("strata/bot/scheduler.py", "TurnScheduler.submit") is not None
    assert _find("strata/bot/scheduler.py", "TurnScheduler.no_such_step") is None
    submit = _find("strata/bot/scheduler.py", "TurnScheduler.submit")
    assert submit is not None
    assert "admit" in _names_used(submit)
    assert "run_turn" not in _names_used(submit)
    layers = _layers()
    up = _crossing(Step(1, "strata/memory/store/intake.py", "", "", None, "—"),
                   Step(2, "strata/bot/turns.py", "", "", 1, "up"), layers)
    assert up == "up"
