"""Files Strata writes are private to its user (issue 12, defect 7): the database, its WAL and
shared-memory files and exported memory are 0600, folders it creates 0700, under the usual
0022 umask. Real files, real SQLite."""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from strata.adapters.console.adapter import ConsoleAdapter
from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.private_files import private_dir
from strata.memory.engines.db import Database
from tests.conftest import TEST_DIM


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def usual_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("usual_umask")
@pytest.mark.sqlite_only("the SQLite file's and its WAL's modes; PostgreSQL's files are"
                         " the server's")
async def test_new_database_wal_and_shm_are_private(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    db = await Database.open(path, TEST_DIM)
    try:
        await db.execute_write("INSERT INTO meta (key, value) VALUES ('probe', 'x')")
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert all(f.exists() for f in files)
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
    finally:
        await db.close()


@pytest.mark.usefixtures("usual_umask")
@pytest.mark.sqlite_only("the SQLite file's and its WAL's modes; PostgreSQL's files are"
                         " the server's")
async def test_existing_world_readable_database_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = await Database.open(path, TEST_DIM)
    await db.close()
    for f in tmp_path.iterdir():
        f.chmod(0o644)
    db = await Database.open(path, TEST_DIM)
    try:
        await db.execute_write("INSERT INTO meta (key, value) VALUES ('probe', 'x')")
        assert {f.name: mode(f) for f in tmp_path.iterdir()} == {
            f.name: 0o600 for f in tmp_path.iterdir()}
    finally:
        await db.close()


@pytest.mark.usefixtures("usual_umask")
async def test_console_export_file_is_private(settings: Settings, clock: ManualClock,
                                              tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    monkeypatch.chdir(out_dir)
    app = await App.create(settings, clock=clock)
    try:
        out = io.StringIO()
        adapter = ConsoleAdapter(user="erin", channel="default", clock=clock,
                                 stdin=io.StringIO("hello\n/export\n"), stdout=out,
                                 interactive=False)
        await adapter.start(app.turns())
    finally:
        await app.close()
    exports = list(out_dir.glob("strata-export-*.json"))
    assert len(exports) == 1, out.getvalue()
    assert b"hello" in exports[0].read_bytes()
    assert mode(exports[0]) == 0o600


@pytest.mark.usefixtures("usual_umask")
def test_private_dir_is_0700_even_when_it_existed(tmp_path: Path) -> None:
    made = private_dir(tmp_path / "a" / "store")
    assert made.is_dir() and mode(made) == 0o700
    (tmp_path / "open").mkdir(mode=0o755)
    assert mode(private_dir(tmp_path / "open")) == 0o700
