"""The operator commands on a real database: `strata jobs run --job consolidate|decay`,
`strata memory show` (the hierarchy) and `strata memory map`. Consolidate runs in-process (it
shares the process's UMAP JIT with the other roll-up tests); decay also as a real subprocess."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from strata.app.cli import main
from strata.core.clock import to_iso
from strata.memory.engines.db import Database
from tests.conftest import START, TEST_DIM, strata_env
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_rollup import SIZES, summarise
from tests.lifecycle_helpers import add_episode, add_turn, blobs, make_scope

ROOT = Path(__file__).parents[2]


async def _seed(db_target: Path | str) -> None:
    db = await Database.open(db_target, TEST_DIM)
    try:
        scope = await make_scope(db, "kim", START)
        for i, vec in enumerate(blobs(SIZES, TEST_DIM, seed=0)):
            rows = await add_turn(scope, i, START, words=3)
            await add_episode(scope, vec, START, summary=f"leaf {i}", rows=rows)
    finally:
        await db.close()


def test_consolidate_show_map_decay(fake_openai: FakeOpenAI, db_target: Path | str, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str],
                                    subprocess_env: dict[str, str]) -> None:
    for key, value in strata_env(fake_openai, db_target).items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)  # no stray ./strata.toml
    asyncio.run(_seed(db_target))
    fake_openai.responder = summarise

    assert main(["jobs", "run", "--job", "consolidate", "--user", "kim",
                 "--now", to_iso(START)]) == 0
    assert "clusters" in capsys.readouterr().out

    assert main(["memory", "show", "--user", "kim", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["hierarchy"][0]
    assert shown["live"]["topic"] == shown["apexes"]["topic"] >= 3
    assert shown["tombstoned"] + shown["apexes"]["leaf"] == 50
    assert {e["level"] for e in shown["top"]} >= {1}
    assert main(["memory", "show", "--user", "kim"]) == 0
    assert "topic: " in capsys.readouterr().out

    png = tmp_path / "map.png"
    assert main(["memory", "map", "--user", "kim", "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    drawn = capsys.readouterr()
    assert "apex episodes" in drawn.out
    # The steps are shown on a terminal only (tests/integration/test_progress.py): a pipe
    # gets none of the bar's fragments.
    assert drawn.err == ""
    # Derived from the memory, so private; an existing file is replaced only when told.
    assert png.stat().st_mode & 0o777 == 0o600
    png.write_bytes(b"my holiday photo")
    assert main(["memory", "map", "--user", "kim", "--out", str(png)]) == 2
    assert "--force" in capsys.readouterr().err and png.read_bytes() == b"my holiday photo"
    assert main(["memory", "map", "--user", "kim", "--out", str(png), "--force"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "apex" in capsys.readouterr().out

    # Decay 31 days later as a real process: the tombstoned children are gone.
    later = to_iso(START + timedelta(days=31))
    proc = subprocess.run([sys.executable, "-m", "strata.app.cli", "jobs", "run", "--job", "decay",
                           "--user", "kim", "--now", later], env=subprocess_env,
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"{shown['tombstoned']} tombstoned episodes deleted" in proc.stdout \
        or f"deleted (older than 30 days): {shown['tombstoned']}" in proc.stdout
    assert main(["memory", "show", "--user", "kim", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hierarchy"][0]["tombstoned"] == 0


def test_bad_input_is_a_clear_error(fake_openai: FakeOpenAI, db_target: Path | str, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in strata_env(fake_openai, db_target).items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    assert main(["jobs", "run", "--job", "decay", "--user", "nobody"]) == 2
    assert "no person called 'nobody'" in capsys.readouterr().err
    assert main(["jobs", "run", "--job", "decay", "--now", "tuesday"]) == 2
    assert "not an ISO" in capsys.readouterr().err
    asyncio.run(_seed(db_target))
    assert main(["memory", "map", "--user", "kim", "--out", str(tmp_path / "no" / "m.png")]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["jobs", "run", "--job", "everything"])
