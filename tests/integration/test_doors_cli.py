"""What the command line says when the database cannot be used: a damaged file names the way
back (a backup, `strata db restore`), and doctor's fix for a folder that exists but cannot be
written is about its permissions, never "make the folder"."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from strata.app.cli import main
from strata.app.doctor import run_doctor
from strata.core.config import load_settings


def test_a_truncated_database_points_at_restore(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "strata.db"
    monkeypatch.setenv("STRATA_DB", str(db))
    monkeypatch.setenv("STRATA_LLM_EMBEDDED", "false")
    assert main(["db", "migrate"]) == 0
    assert main(["db", "backup", str(tmp_path / "copy.db")]) == 0
    os.truncate(db, db.stat().st_size // 2)
    before = db.read_bytes()
    capsys.readouterr()
    for argv in (["memory", "show", "--user", "alice"], ["jobs", "status"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "malformed" in err and "strata db restore" in err, err
        assert f"mv {db} {db}.damaged" in err, err
    assert db.read_bytes() == before  # nothing tried to mend it
    # The way back works on the damaged file: check says what is wrong, restore replaces it.
    assert main(["db", "check"]) != 0
    assert "CHECKS FAILED" in capsys.readouterr().out
    db.rename(tmp_path / "strata.db.damaged")  # as the hint says
    assert main(["db", "restore", str(tmp_path / "copy.db"), "--yes"]) == 0
    assert main(["jobs", "status"]) == 0
    assert (tmp_path / "strata.db.damaged").read_bytes() == before


@pytest.mark.skipif(os.access("/proc/1", os.W_OK), reason="/proc/1 is writable here")
async def test_doctor_on_a_folder_that_exists_but_is_not_writable() -> None:
    # /proc/1 exists and refuses new files, even to root (which chmod cannot stop).
    settings = load_settings(None, env={"STRATA_DB": "/proc/1/strata.db",
                                        "STRATA_LLM_EMBEDDED": "false"})
    lines = [c.line() for c in await run_doctor(settings)]
    line = next(x for x in lines if "/proc/1/strata.db" in x)
    assert line.startswith("FAIL") and "yourself" not in line, line
    assert "write access" in line and "STRATA_DB" in line, line


def test_memory_map_that_cannot_draw_prints_only_its_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STRATA_DB", str(tmp_path / "strata.db"))
    monkeypatch.setenv("STRATA_LLM_EMBEDDED", "false")
    assert main(["db", "migrate"]) == 0
    capsys.readouterr()
    for user in ("nobody", "alice"):
        if user == "alice":
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"hello\n")))
            main(["chat", "--user", "alice", "--no-jobs"])
            capsys.readouterr()
        code = main(["memory", "map", "--user", user, "--out", str(tmp_path / "map.png")])
        out, err = capsys.readouterr()
        assert code != 0 and out == "", out
        assert err.startswith("error: ") and err.count("\n") == 1, err


def test_strata_web_beyond_this_machine_without_a_public_url_names_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STRATA_DB", str(tmp_path / "strata.db"))
    monkeypatch.setenv("STRATA_LLM_EMBEDDED", "false")
    assert main(["web", "--listen", "0.0.0.0:8799"]) == 2
    err = capsys.readouterr().err
    assert "web.public_url" in err and "STRATA_WEB_PUBLIC_URL" in err and "127.0.0.1" in err
    assert not (tmp_path / "strata.db").exists()  # refused before anything was made
