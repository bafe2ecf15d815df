"""`strata db backup|restore|check` as an operator runs them: real subprocesses, real SQLite
files, a running `strata run --console` against the fake model server."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import sqlite_vec

from strata.memory.engines.driver import sqlite_driver
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_run_cli import read_line, start_run

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.sqlite_only(
    "strata db backup/restore/check copy and check a SQLite file; PostgreSQL refuses them"
    " with an error naming pg_dump (test_pg_engine.py)")


def strata(args: list[str], env: dict[str, str], stdin: str = "",
           cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "strata.app.cli", *args], input=stdin, env=env,
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def user_rows(env: dict[str, str], user: str) -> list[str]:
    out = strata(["memory", "export", "--user", user], env)
    assert out.returncode == 0, out.stderr
    return [r["content"] for r in json.loads(out.stdout)["transcript"] if r["role"] == "user"]


def test_backup_while_the_bot_runs_restores_every_acknowledged_turn(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    env = dict(subprocess_env, STRATA_COGNITION_ENABLED="false",
               STRATA_ACCESS_MODEL_CALLS_PER_MINUTE="1000")
    proc = start_run(env, "--console", "--user", "alice")
    acknowledged: list[str] = []
    try:
        assert proc.stdin is not None

        def say(text: str) -> None:
            assert proc.stdin is not None
            proc.stdin.write(text + "\n")
            proc.stdin.flush()
            assert read_line(proc) == f"You said: {text}"
            acknowledged.append(text)

        for i in range(20):
            say(f"before {i}")
        before_backup = list(acknowledged)
        # The bot keeps taking turns while the backup copies.
        talker = threading.Thread(target=lambda: [say(f"during {i}") for i in range(20)])
        talker.start()
        backup = strata(["db", "backup", str(tmp_path / "copy.db")], env)
        talker.join(120)
        assert backup.returncode == 0, backup.stderr
        assert "passes the integrity checks" in backup.stdout
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert len(acknowledged) == 40

    restored = dict(env, STRATA_DB=str(tmp_path / "restored.db"))
    out = strata(["db", "restore", str(tmp_path / "copy.db")], restored)
    assert out.returncode == 0, out.stderr
    check = strata(["db", "check"], restored)
    assert check.returncode == 0, check.stdout
    assert "fts5 transcript_fts" in check.stdout and "all checks passed" in check.stdout
    rows = user_rows(restored, "alice")
    assert rows[: len(before_backup)] == before_backup
    # Whatever of the turns during the copy made it in, it came whole and in order.
    assert rows == acknowledged[: len(rows)]


def test_restore_refuses_a_broken_file_and_keeps_the_replaced_database(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    assert strata(["chat", "--user", "alice"], subprocess_env, "first\n").returncode == 0
    good = tmp_path / "good.db"
    assert strata(["db", "backup", str(good)], subprocess_env).returncode == 0
    assert strata(["chat", "--user", "alice"], subprocess_env, "second\n").returncode == 0

    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database at all" * 200)
    broken = tmp_path / "broken.db"
    data = good.read_bytes()
    page = 4096
    # Zero a b-tree page in the middle: SQLite's integrity_check finds it.
    broken.write_bytes(data[: 5 * page] + b"\0" * page + data[6 * page:])
    for bad in (junk, broken):
        out = strata(["db", "restore", "--yes", str(bad)], subprocess_env)
        assert out.returncode == 2 and out.stderr.startswith("error: refusing to restore"), (
            out.stderr)
        assert user_rows(subprocess_env, "alice") == ["first", "second"]

    out = strata(["db", "restore", "--yes", str(good)], subprocess_env)
    assert out.returncode == 0, out.stderr
    assert user_rows(subprocess_env, "alice") == ["first"]
    before = dict(subprocess_env, STRATA_DB=subprocess_env["STRATA_DB"] + ".before-restore.1")
    assert user_rows(before, "alice") == ["first", "second"]


def test_check_finds_a_keyword_index_out_of_step_with_its_rows(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], db_path: Path) -> None:
    assert strata(["chat", "--user", "alice"], subprocess_env, "one\ntwo\n").returncode == 0
    assert strata(["db", "check"], subprocess_env).returncode == 0
    conn = sqlite_driver().connect(str(db_path), isolation_level=None)
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        # A row deleted behind the FTS5 index's back (its delete trigger gone).
        conn.execute("DROP TRIGGER transcript_fts_delete")
        conn.execute("DELETE FROM transcript WHERE content = 'one'")
    finally:
        conn.close()
    out = strata(["db", "check"], subprocess_env)
    assert out.returncode == 1
    failed = [line for line in out.stdout.splitlines() if line.startswith("FAIL")]
    assert failed and all("fts5 transcript" in line for line in failed)
    assert "CHECKS FAILED" in out.stdout
