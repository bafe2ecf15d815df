"""The reliability suite's registry and report format (the suite itself runs outside pytest:
`python -m bench.reliability --quick --out FILE`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.reliability.__main__ import main
from bench.reliability.cases import SUITE
from bench.reliability.registry import (
    CaseResult,
    Context,
    Registry,
    markdown,
    report,
    run_case,
    validate,
)

ISSUE_CASES = ["sigkill", "model_faults", "platform_faults", "fuzz", "isolation", "injection",
               "load", "job_fault"]


def test_the_suite_has_the_eight_cases_of_the_issue_in_its_order() -> None:
    assert SUITE.names() == ISSUE_CASES
    for case in SUITE:
        assert case.does and case.must_hold


async def test_a_raising_case_fails_with_its_error_as_the_figure(tmp_path: Path) -> None:
    registry = Registry()

    @registry.case("boom", "raises", "nothing")
    async def boom(ctx: Context) -> CaseResult:
        raise RuntimeError("the fake went away")

    @registry.case("fine", "passes", "everything")
    async def fine(ctx: Context) -> CaseResult:
        return CaseResult("fine", "3 of 3 held", ctx.quick)

    ctx = Context(quick=True, workdir=tmp_path)
    results = [await run_case(case, ctx) for case in registry]
    assert [(r.name, r.ok) for r in results] == [("boom", False), ("fine", True)]
    assert results[0].figure == "case raised RuntimeError: the fake went away"
    data = report(results, quick=True, command="python -m bench.reliability --quick")
    validate(json.loads(json.dumps(data)))
    assert data["ok"] is False
    assert [c["name"] for c in data["cases"]] == ["boom", "fine"]
    table = markdown(registry, results).splitlines()
    assert table[0].startswith("| case | what it does |") and len(table) == 4
    assert table[3].endswith("| 3 of 3 held | ✓ |")


def test_a_case_registered_twice_or_a_bad_order_is_refused() -> None:
    registry = Registry()

    async def run(ctx: Context) -> CaseResult:
        return CaseResult("a", "x", True)

    registry.case("a", "d", "m")(run)
    with pytest.raises(ValueError, match="twice"):
        registry.case("a", "d", "m")(run)
    with pytest.raises(ValueError, match="every case once"):
        registry.order(["a", "b"])


@pytest.mark.parametrize("broken", [
    {},
    {"cases": []},
    {"cases": [{"name": "x", "figure": "", "ok": True}]},
    {"cases": [{"name": "x", "figure": "1", "ok": "yes"}]},
])
def test_validate_rejects_reports_without_the_schema(broken: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        validate(broken)


def test_an_unknown_case_name_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--only", "nope", "--out", str(tmp_path / "r.json")]) == 2
    assert capsys.readouterr().err.startswith("error: no case 'nope'; the cases are: sigkill")
    assert not (tmp_path / "r.json").exists()
