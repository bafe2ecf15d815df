"""One budgeted model path: a consolidate run's model calls (compaction, roll-up summaries)
count against the job's token budget and show in `strata jobs status`; a tiny budget stops
the run's further calls (nothing stored from a refused call, the run waits for a retry)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from strata.app.cli import main
from strata.core.clock import ManualClock, to_iso
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
def kim(fake_openai: FakeOpenAI, db_target: Path | str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Kim's 50 leaf episodes, and Strata pointed at the fake model."""
    for key, value in strata_env(fake_openai, db_target).items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    asyncio.run(_seed(db_target))
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


async def test_chat_turns_and_episode_summaries_are_counted(
        fake_openai: FakeOpenAI, settings: Any, clock: ManualClock) -> None:
    """A person's chat turns and the episode cutter's summaries are charged to that person
    (`chat:turn`, `cut:turn` in `strata jobs status`), like the after-turn steps."""
    from strata.app.compose import App
    from strata.memory.coordination.jobruns import JobRunRepo
    from tests.integration.test_memory_controls import say

    app = await App.create(settings, clock=clock)
    try:
        await say(app, clock, "I moved to Lisbon last spring.")
        await app.processor.drain()
        alice = await app.persons.find("alice")
        assert alice is not None and app.cutter is not None
        channel = (await app.transcript.for_owner(alice.id))[0].channel_id
        clock.advance(hours=3)
        await app.cutter.flush(channel, clock.now())
        usage = {row.job: row for row in await JobRunRepo(app.db).summary(alice.id)}
        assert usage["chat:turn"].runs == 1 and usage["chat:turn"].tokens > 0
        assert usage["cut:turn"].runs >= 1 and usage["cut:turn"].tokens > 0
    finally:
        await app.close()
