"""One budgeted model path: a consolidate run's model calls (compaction, roll-up summaries)
count against the job's token budget and show in `strata jobs status`; a tiny budget stops
the run's further calls (nothing stored from a refused call, the run waits for a retry)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.cli import main
from bot.clock import to_iso
from tests.conftest import START, strata_env
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_lifecycle_cli import _seed
from tests.integration.test_rollup import summarise


def _status(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, object]]:
    assert main(["jobs", "status", "--user", "kim", "--json"]) == 0
    return {row["job"]: row for row in json.loads(capsys.readouterr().out)}


def _run(capsys: pytest.CaptureFixture[str]) -> int:
    code = main(["jobs", "run", "--job", "consolidate", "--user", "kim", "--now", to_iso(START)])
    capsys.readouterr()
    return code


@pytest.fixture
def kim(fake_openai: FakeOpenAI, db_path: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Kim's 50 leaf episodes, and Strata pointed at the fake model."""
    for key, value in strata_env(fake_openai, db_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    asyncio.run(_seed(db_path))
    fake_openai.responder = summarise


def test_consolidate_calls_are_counted(
        kim: None, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:

    # A roomy budget: every roll-up summary is asked, and its tokens are the run's.
    monkeypatch.setenv("STRATA_COGNITION_JOB_TOKEN_BUDGET", "1000000")
    assert _run(capsys) == 0
    calls = len(fake_openai.chat_requests())
    assert calls >= 3
    row = _status(capsys)["consolidate"]
    assert row["last_status"] == "ok"
    assert isinstance(row["tokens"], int) and row["tokens"] > 0


def test_a_tiny_budget_stops_further_calls(
        kim: None, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:

    # One token: the first summary is asked (the budget is not spent yet), then the run's
    # budget is gone and no further call reaches the model.
    monkeypatch.setenv("STRATA_COGNITION_JOB_TOKEN_BUDGET", "1")
    assert _run(capsys) == 1
    assert len(fake_openai.chat_requests()) == 1
    row = _status(capsys)["consolidate"]
    assert row["last_status"] == "error"
    assert "budget" in str(row["last_result"])
    assert isinstance(row["tokens"], int) and row["tokens"] > 0
