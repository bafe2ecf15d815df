"""`strata jobs status` shows what the grounding rule refused, per person, layer and reason
(the table below the jobs, and each job row's `refused` in `--json`), for one person with
`--user`, never another's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from strata.app.cli import main
from strata.memory.checks import grounding as g
from strata.memory.engines.db import Database
from strata.memory.store.persons import PersonRepo
from strata.memory.store.refusals import RefusalRepo
from tests.conftest import START, TEST_DIM, strata_env
from tests.fakes.openai_server import FakeOpenAI


async def _seed(target: Path | str) -> None:
    db = await Database.open(target, TEST_DIM)
    try:
        persons, refusals = PersonRepo(db), RefusalRepo(db)
        kim = await persons.get_or_create("console:kim", "kim", START)
        lou = await persons.get_or_create("console:lou", "lou", START)
        echo = g.Refusal(g.PATTERNS, g.ECHO, "short statement about the person")
        await refusals.record(kim.id, [echo, echo, g.Refusal(g.PORTRAIT, g.NAME, "Alice")],
                              START)
        await refusals.record(lou.id, [g.Refusal(g.ROLLUP, g.NUMBER, "300 hikes")], START)
    finally:
        await db.close()


def test_jobs_status_shows_refusals_per_layer_and_reason(
        fake_openai: FakeOpenAI, db_target: Path | str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in strata_env(fake_openai, db_target).items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    asyncio.run(_seed(db_target))

    assert main(["jobs", "status", "--user", "kim", "--json"]) == 0
    rows = {r["job"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["patterns"]["refused"] == {f"{g.PATTERNS}: {g.ECHO}": 2}
    assert rows["synthesis"]["refused"] == {f"{g.PORTRAIT}: {g.NAME}": 1}
    assert rows["consolidate"]["refused"] == {}  # lou's roll-up refusal is lou's

    assert main(["jobs", "status", "--user", "kim"]) == 0
    table = capsys.readouterr().out
    assert "refused by the grounding rule" in table
    lines = [line.split() for line in table.splitlines()]
    assert ["kim", "patterns", "2", "2026-01-05", "09:00", *g.ECHO.split()] in lines
    assert "lou" not in table

    assert main(["jobs", "status"]) == 0
    assert "300" not in (everyone := capsys.readouterr().out)  # counts, never the text
    assert ["lou", "rollup", "1", "2026-01-05", "09:00", *g.NUMBER.split()] in [
        line.split() for line in everyone.splitlines()]
