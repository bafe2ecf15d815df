"""Files are never harmed (issue 21, defects 2, 3, 4 and 9): a mistyped STRATA_DB keeps its
mode and content, reading commands change nothing on disk (and work on a read-only copy),
backups and restores are private and never replace a file without being told to, and a
database from an earlier version is moved safely. Real SQLite files; the command line runs in
this process (`tests.cli_inprocess`) unless the point is a second process, the working folder
or a terminal."""

from __future__ import annotations

import hashlib
import stat
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from strata.core.config import Settings
from strata.memory.engines.db import Database
from strata.memory.engines.driver import sqlite_driver
from tests.cli_inprocess import strata_in
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.test_backup import ROOT, strata, user_rows
from tests.integration.test_private_files import mode, usual_umask  # noqa: F401 - a fixture

pytestmark = [pytest.mark.usefixtures("usual_umask"), pytest.mark.sqlite_only(
    "the modes, contents and times of a SQLite file and its folder; PostgreSQL's files are "
    "the server's")]

READING = [
    ["doctor"],
    ["memory", "show", "--user", "alice"],
    ["memory", "show", "--user", "alice", "--json"],
    ["memory", "facts", "--user", "alice"],
    ["memory", "episodes", "--user", "alice"],
    ["memory", "recall", "--user", "alice", "hello"],
    ["memory", "export", "--user", "alice"],
    ["db", "check"],
    ["jobs", "status"],
    ["agents", "list"],
]


def snapshot(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Every file of `folder` (and the folder itself): content hash, mode, mtime in ns."""
    seen = {".": ("", mode(folder), folder.stat().st_mtime_ns)}
    for path in sorted(folder.iterdir()):
        st = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        seen[path.name] = (digest, stat.S_IMODE(st.st_mode), st.st_mtime_ns)
    return seen


def test_a_mistyped_database_file_keeps_its_mode_and_content(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("x\n")
    notes.chmod(0o644)
    env = dict(subprocess_env, STRATA_DB=str(notes))
    for args, stdin in ((["doctor"], ""), (["db", "migrate"], ""),
                        (["chat", "--user", "alice"], "hello\n"),
                        (["memory", "show", "--user", "alice"], "")):
        out = strata_in(args, env, stdin)
        assert out.returncode != 0, args
        assert "not a SQLite database" in out.stdout + out.stderr, (args, out.stderr)
        assert mode(notes) == 0o644 and notes.read_text() == "x\n", args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_another_programs_sqlite_file_is_not_migrated(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    other = tmp_path / "places.sqlite"
    conn = sqlite_driver().connect(str(other))
    conn.execute("CREATE TABLE bookmarks (url TEXT)")
    conn.commit()
    conn.close()
    other.chmod(0o644)
    before = snapshot(tmp_path)
    out = strata_in(["db", "migrate"], dict(subprocess_env, STRATA_DB=str(other)))
    assert out.returncode == 2 and "not a Strata database" in out.stderr, out.stderr
    assert snapshot(tmp_path) == before


def test_reading_commands_change_no_file(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], db_path: Path,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    assert strata_in(["chat", "--user", "alice"], subprocess_env, "hello\n").returncode == 0
    before = snapshot(db_path.parent)
    assert not (db_path.parent / "strata.db-wal").exists()
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    # The source of a backup or a copy is only read, too.
    for args in [*READING, ["db", "backup", str(elsewhere / "b.db")],
                 ["db", "copy", str(db_path), str(elsewhere / "c.db")]]:
        out = strata_in(args, subprocess_env)
        assert out.returncode == 0, (args, out.stderr)
        assert snapshot(db_path.parent) == before, (args, out.stderr)


def test_db_check_and_memory_show_work_on_a_read_only_copy(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path,
        db_path: Path) -> None:
    assert strata_in(["chat", "--user", "alice"], subprocess_env, "hello\n").returncode == 0
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    copy = shelf / "strata.db"
    copy.write_bytes(db_path.read_bytes())
    copy.chmod(0o444)
    shelf.chmod(0o555)
    try:
        env = dict(subprocess_env, STRATA_DB=str(copy))
        before = snapshot(shelf)
        check = strata_in(["db", "check"], env)
        assert check.returncode == 0 and "all checks passed" in check.stdout, check.stderr
        assert "fts5 transcript_fts" in check.stdout
        show = strata_in(["memory", "show", "--user", "alice"], env)
        assert show.returncode == 0 and "transcript rows: 2" in show.stdout, show.stderr
        # Root ignores permission bits, so the proof is that nothing appeared or changed.
        assert snapshot(shelf) == before
    finally:
        shelf.chmod(0o755)


def test_doctor_tells_the_truth_about_a_missing_folder(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)
    target = home / "new" / "deeper" / "strata.db"
    env = dict(subprocess_env, STRATA_DB=str(target))
    doctor = strata_in(["doctor"], env)
    line = next(x for x in doctor.stdout.splitlines() if "database" in x)
    assert line.startswith("ok") and f"folder {target.parent} does not exist" in line, line
    assert "creates it" in line
    assert not (home / "new").exists()
    show = strata_in(["memory", "show", "--user", "alice"], env)
    assert show.returncode == 2 and "nothing is stored yet" in show.stderr, show.stderr
    assert not (home / "new").exists()
    assert strata_in(["chat", "--user", "alice"], env, "hello\n").returncode == 0
    assert target.is_file() and mode(target) == 0o600
    assert mode(home / "new") == 0o700 and mode(target.parent) == 0o700
    assert mode(home) == 0o755  # a folder Strata did not make keeps its mode


def test_doctor_fails_a_folder_that_cannot_be_made(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder\n")
    env = dict(subprocess_env, STRATA_DB=str(blocker / "strata.db"))
    doctor = strata_in(["doctor"], env)
    line = next(x for x in doctor.stdout.splitlines() if "database" in x)
    assert doctor.returncode == 1 and line.startswith("FAIL"), line
    assert f"{blocker} is not a folder" in line


def test_backup_is_private_and_never_replaces_a_file_unasked(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    assert strata_in(["chat", "--user", "alice"], subprocess_env, "hello\n").returncode == 0
    target = tmp_path / "backups" / "nightly" / "copy.db"
    out = strata_in(["db", "backup", str(target)], subprocess_env)
    assert out.returncode == 0, out.stderr
    assert mode(target) == 0o600
    assert mode(target.parent) == 0o700 and mode(tmp_path / "backups") == 0o700

    precious = tmp_path / "precious.txt"
    precious.write_text("my thesis\n")
    precious.chmod(0o644)
    out = strata_in(["db", "backup", str(precious)], subprocess_env)
    assert out.returncode == 2 and "--force" in out.stderr, out.stderr
    assert precious.read_text() == "my thesis\n" and mode(precious) == 0o644
    out = strata_in(["db", "backup", "--force", str(precious)], subprocess_env)
    assert out.returncode == 0, out.stderr
    assert precious.read_bytes().startswith(b"SQLite format 3\0") and mode(precious) == 0o600


def test_restore_asks_and_keeps_every_earlier_database(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], db_path: Path,
        tmp_path: Path) -> None:
    assert strata_in(["chat", "--user", "alice"], subprocess_env, "first\n").returncode == 0
    good = tmp_path / "good.db"
    assert strata_in(["db", "backup", str(good)], subprocess_env).returncode == 0
    assert strata_in(["chat", "--user", "alice"], subprocess_env, "second\n").returncode == 0

    unasked = strata_in(["db", "restore", str(good)], subprocess_env)
    assert unasked.returncode == 2 and "--yes" in unasked.stderr, unasked.stderr
    assert user_rows(subprocess_env, "alice") == ["first", "second"]

    assert strata_in(["db", "restore", "--yes", str(good)], subprocess_env).returncode == 0
    assert strata_in(["chat", "--user", "alice"], subprocess_env, "third\n").returncode == 0
    again = strata_in(["db", "restore", "--force", str(good)], subprocess_env)
    assert again.returncode == 0, again.stderr
    kept = sorted(p.name for p in db_path.parent.glob("strata.db.before-restore*"))
    assert kept == ["strata.db.before-restore.1", "strata.db.before-restore.2"]
    for name, rows in zip(kept, (["first", "second"], ["first", "third"]), strict=True):
        assert mode(db_path.parent / name) == 0o600
        assert user_rows(dict(subprocess_env, STRATA_DB=str(db_path.parent / name)),
                         "alice") == rows
    assert user_rows(subprocess_env, "alice") == ["first"]


def test_legacy_database_advice_and_a_safe_move(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    env = {k: v for k, v in subprocess_env.items() if k != "STRATA_DB"}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    work = tmp_path / "work"
    work.mkdir()
    default = tmp_path / "data" / "strata" / "strata.db"

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        return strata(args, env, cwd=work)  # in the folder with the old ./strata.db

    legacy_env = dict(env, STRATA_DB=str(work / "strata.db"))
    assert strata(["chat", "--user", "bob"], legacy_env, "old times\n").returncode == 0
    (work / "strata.db").chmod(0o644)  # as an earlier version left it
    # Only the old database: the notice points at the safe command, which moves it.
    shown = run(["memory", "show", "--user", "bob"])
    [note] = [x for x in shown.stderr.splitlines() if x.startswith("note:")]
    assert "strata db move" in note and "mv " not in note, note
    moved = run(["db", "move"])
    assert moved.returncode == 0, moved.stderr
    assert not (work / "strata.db").exists() and not list(work.iterdir())
    assert mode(default) == 0o600 and mode(default.parent) == 0o700
    assert user_rows(dict(env, STRATA_DB=str(default)), "bob") == ["old times"]

    # Both: the notice never suggests moving one over the other, and move refuses to.
    assert strata(["chat", "--user", "carol"], legacy_env, "new times\n").returncode == 0
    before = snapshot(default.parent)
    shown = run(["memory", "show", "--user", "carol"])
    [note] = [x for x in shown.stderr.splitlines() if x.startswith("note:")]
    assert "mv " not in note and "both" in note and str(default) in note, note
    refused = run(["db", "move"])
    assert refused.returncode == 2 and "already exists" in refused.stderr, refused.stderr
    assert snapshot(default.parent) == before and (work / "strata.db").is_file()
    aside = tmp_path / "kept" / "carol.db"
    assert run(["db", "move", str(aside)]).returncode == 0
    assert user_rows(dict(env, STRATA_DB=str(aside)), "carol") == ["new times"]
    assert user_rows(dict(env, STRATA_DB=str(default)), "bob") == ["old times"]


def test_move_refuses_a_database_in_use(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], db_path: Path,
        tmp_path: Path) -> None:
    assert strata(["chat", "--user", "alice"], subprocess_env, "hello\n").returncode == 0
    holder = sqlite_driver().connect(str(db_path), isolation_level=None)
    try:
        holder.execute("SELECT count(*) FROM transcript").fetchone()  # another process's reader
        out = strata(["db", "move", str(tmp_path / "moved.db")], subprocess_env)
        assert out.returncode == 2 and "in use" in out.stderr, out.stderr
        assert db_path.is_file() and not (tmp_path / "moved.db").exists()
    finally:
        holder.close()


def test_reading_a_database_in_use_sees_its_wal_and_adds_no_file(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], db_path: Path) -> None:
    assert strata(["chat", "--user", "alice"], subprocess_env, "first\n").returncode == 0
    holder = sqlite_driver().connect(str(db_path), isolation_level=None)
    try:
        holder.execute("PRAGMA wal_autocheckpoint = 0")
        holder.execute("SELECT count(*) FROM transcript").fetchone()  # another process's reader
        assert strata(["chat", "--user", "alice"], subprocess_env, "second\n").returncode == 0
        # "second" is only in the WAL: the holder keeps it from being folded in and removed.
        assert (db_path.parent / "strata.db-wal").stat().st_size > 0
        lasting = {name: value for name, value in snapshot(db_path.parent).items()
                   if name in ("strata.db", "strata.db-wal")}
        names = set(snapshot(db_path.parent))
        show = strata(["memory", "show", "--user", "alice"], subprocess_env)
        assert show.returncode == 0 and "transcript rows: 4" in show.stdout, show.stderr
        after = snapshot(db_path.parent)
        assert set(after) == names  # the -shm is shared memory: readers may mark it
        assert {name: after[name] for name in lasting} == lasting
    finally:
        holder.close()


async def test_a_read_only_database_refuses_writes_and_changes_nothing(
        settings: Settings, db_path: Path) -> None:
    made = await Database.open(db_path, settings.embed.dim)
    await made.close()
    before = snapshot(db_path.parent)
    db = await Database.open(db_path, settings.embed.dim, read_only=True)
    try:
        assert db.read_only and await db.fetchval("SELECT count(*) FROM transcript") == 0
        with pytest.raises(sqlite_driver().OperationalError, match="readonly"):
            await db.execute_write("INSERT INTO meta (key, value) VALUES ('x', 'y')")
    finally:
        await db.close()
    assert snapshot(db_path.parent) == before


def test_at_a_terminal_backup_asks_before_replacing_a_file(
        fake_openai: FakeOpenAI, subprocess_env: dict[str, str], tmp_path: Path) -> None:
    assert strata(["chat", "--user", "alice"], subprocess_env, "hello\n").returncode == 0
    target = tmp_path / "existing.txt"
    target.write_text("keep me\n")
    for answer, code in (("n", 2), ("y", 0)):
        child = pexpect.spawn(sys.executable, ["-m", "strata.app.cli", "db", "backup", str(target)],
                              env=subprocess_env, cwd=str(ROOT), encoding="utf-8", timeout=60)
        child.expect(r"replace it with the backup\? \[y/N\] ")
        child.sendline(answer)
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == code, child.before
        if answer == "n":
            assert target.read_text() == "keep me\n" and mode(target) == 0o644
    assert target.read_bytes().startswith(b"SQLite format 3\0") and mode(target) == 0o600
