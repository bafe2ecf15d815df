"""What only the PostgreSQL engine has: the same logical schema as SQLite's, its migration
record, and a test server that is stopped even when the test process is killed by SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from strata.core.clock import ManualClock
from strata.core.errors import DimensionMismatchError, StorageError
from strata.memory.engines.db import Database
from strata.memory.engines.migrations import available
from strata.memory.rules.fact_types import NewFact
from strata.memory.store.episodes import EpisodeRepo, NewEpisode
from strata.memory.store.export import export_person
from strata.memory.store.facts import FactRepo
from tests.conftest import TEST_DIM
from tests.memory_helpers import channel, person, turn
from tests.pg_server import PgServer

pytestmark = pytest.mark.postgres_only

ROOT = Path(__file__).parents[2]
VECTOR_TABLES = {"transcript_vec", "episode_vec", "fact_vec"}


def _kind(declared: str) -> str:
    declared = declared.upper()
    if declared.startswith("FLOAT[") or declared == "USER-DEFINED":
        return "vector"
    return {"INTEGER": "int", "BIGINT": "int", "REAL": "float", "DOUBLE PRECISION": "float",
            "TEXT": "text", "BLOB": "bytes", "BYTEA": "bytes"}.get(declared, declared)


async def _sqlite_columns(db: Database) -> dict[str, dict[str, tuple[str, bool]]]:
    tables = await db.fetchall("PRAGMA table_list")
    out: dict[str, dict[str, tuple[str, bool]]] = {}
    for t in tables:
        name, kind = str(t["name"]), str(t["type"])
        if name.startswith("sqlite_") or not (kind == "table" or name in VECTOR_TABLES):
            continue
        if any(name.startswith(f"{v}_vector_chunks") for v in VECTOR_TABLES):  # vec0's own
            continue
        columns = await db.fetchall(f'PRAGMA table_info("{name}")')
        # vec0 declares no types: its key and partition are integers, `embedding` a vector.
        out[name] = {str(c["name"]): (
            _kind(str(c["type"]) or ("FLOAT[]" if c["name"] == "embedding" else "INTEGER")),
            bool(c["notnull"]) or bool(c["pk"]) or name in VECTOR_TABLES) for c in columns}
    return out


async def _pg_columns(db: Database) -> dict[str, dict[str, tuple[str, bool]]]:
    rows = await db.fetchall(
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns"
        # A generated column (episodes' stored tsvector) is derived, like an index: not data.
        " WHERE table_schema = current_schema() AND is_generated = 'NEVER'"
        " ORDER BY table_name, ordinal_position")
    out: dict[str, dict[str, tuple[str, bool]]] = {}
    for r in rows:
        out.setdefault(str(r[0]), {})[str(r[1])] = (_kind(str(r[2])), r[3] == "NO")
    return out


async def test_postgres_has_the_same_tables_columns_types_and_nullability(
        db_path: Path, pg_url: str) -> None:
    sqlite = await Database.open(db_path, TEST_DIM)
    postgres = await Database.open(pg_url, TEST_DIM)
    try:
        assert postgres.engine == "postgres" and sqlite.engine == "sqlite"
        assert await _pg_columns(postgres) == await _sqlite_columns(sqlite)
    finally:
        await sqlite.close()
        await postgres.close()


async def test_migrations_are_recorded_once_and_the_dimension_is_kept(pg_url: str) -> None:
    db = await Database.open(pg_url, TEST_DIM)
    applied = await db.applied_migrations()
    await db.close()
    assert applied == [(n, name) for n, name, _ in available("strata.memory.engines.pg.migrations")]
    again = await Database.open(pg_url, TEST_DIM)  # re-open: nothing applied twice
    assert await again.applied_migrations() == applied
    await again.close()
    with pytest.raises(DimensionMismatchError, match=f"dimension {TEST_DIM}"):
        await Database.open(pg_url, TEST_DIM + 1)


async def test_an_unreachable_server_is_a_clear_error_without_the_password(
        pg_server: PgServer) -> None:
    url = pg_server.url("no_such_database").replace("postgres:@", "postgres:hunter2@")
    with pytest.raises(StorageError, match="cannot open database") as caught:
        await Database.open(url, TEST_DIM)
    assert "hunter2" not in str(caught.value)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(bool(os.environ.get("STRATA_TEST_PG_URL")),
                    reason="a given server is not started or stopped by the tests")
def test_sigterm_stops_the_server_the_test_process_started() -> None:
    folder = Path(tempfile.mkdtemp(prefix="strata-pg-term-"))
    proc = subprocess.Popen([sys.executable, "-m", "tests.pg_server", "--hold", str(folder)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        assert proc.stdout is not None
        pid = int(proc.stdout.readline())
        assert _running(pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM  # died of the signal, as it would have
        deadline = time.monotonic() + 30  # the postmaster exits after its children
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _running(pid)
        assert not folder.exists()
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("args", [["backup", "copy.db"], ["restore", "copy.db"], ["check"]])
def test_the_sqlite_file_tools_refuse_a_server_and_name_pg_dump(
        subprocess_env: dict[str, str], tmp_path: Path, args: list[str]) -> None:
    assert subprocess_env["STRATA_DB"].startswith("postgresql://")
    out = subprocess.run([sys.executable, "-m", "strata.app.cli", "db", *args], env=subprocess_env,
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2 and "pg_dump" in out.stderr, out.stderr
    assert not (tmp_path / "copy.db").exists()


async def test_stored_words_follow_edits_and_stay_out_of_the_export(pg_url: str) -> None:
    """Episode and fact keyword search rank stored tsvectors (migration 0004), which follow
    an edited text; they are PostgreSQL's derived data, so the person's export does not carry
    them and the export's columns are SQLite's."""
    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    db = await Database.open(pg_url, TEST_DIM)
    try:
        ann = await person(db, "ann", clock)
        chat = await channel(db, ann, "dm", clock)
        [row] = await turn(db, chat, ann, "we walked up the lighthouse", clock)
        repo = EpisodeRepo(db)
        eid = await repo.insert(NewEpisode(ann.id, chat.id, "A walk up the old lighthouse",
                                           "user", clock.now(), clock.now(), (row,),
                                           key_terms="lighthouse walk"),
                                np.ones(TEST_DIM, np.float32), clock.now())

        async def found(words: str) -> list[int]:
            query = db.dialect.keyword_query(words)
            return [int(r[0]) for r in await db.fetchall(
                db.dialect.episode_search, (query, 100, ann.id, 10))]

        assert await found("lighthouse") == [eid]
        await db.execute_write("UPDATE episodes SET summary = ?, key_terms = ? WHERE id = ?",
                               ("A swim at the harbour", "harbour swim", eid))
        assert await found("lighthouse") == [] and await found("harbour") == [eid]
        facts = FactRepo(db)
        fid = await facts.add(NewFact(ann.id, "user_specific", "Ann keeps bees", "user",
                                      attribute="hobby_beekeeping"), None, clock.now())

        async def facts_found(words: str) -> list[int]:
            query = db.dialect.keyword_query(words)
            return [int(r[0]) for r in await db.fetchall(
                db.dialect.fact_search, (query, ann.id, 10))]

        assert await facts_found("bees") == [fid] == await facts_found("beekeeping")
        await db.execute_write("UPDATE facts SET text = ? WHERE id = ?", ("Ann rows", fid))
        assert await facts_found("bees") == [] and await facts_found("rows") == [fid]
        exported = await export_person(db, ann.id)
        [episode] = exported["episodes"]
        assert "words" not in episode and episode["summary"] == "A swim at the harbour"
        [fact] = exported["facts"]
        assert "words" not in fact and fact["text"] == "Ann rows"
    finally:
        await db.close()


async def test_the_server_reads_marks_where_the_lexer_found_them(pg_url: str) -> None:
    """Statements the regex translator broke run as written: a `?` in a comment, a
    dollar-quoted or `E'…'` string stays text, numbered marks bind by name, `%` is literal."""
    db = await Database.open(pg_url, TEST_DIM)
    try:
        row = await db.fetchone(
            "SELECT $$a ? b$$ AS d, E'it\\'s ?' AS e, ? /* why? don't */ AS p,"
            " 7 % 4 AS m, 'x%' LIKE 'x\\%' AS l", ("bound",))
        assert row is not None
        assert (row["d"], row["e"], row["p"], row["m"], row["l"]) == (
            "a ? b", "it's ?", "bound", 3, True)
        row = await db.fetchone("SELECT ?2::text || ?1::text || ?2::text AS s", ("-", "ab"))
        assert row is not None and row["s"] == "ab-ab"
        # An empty list compares with a column of any type (an empty subquery was text).
        await db.execute_write("INSERT INTO persons (kind, name, created_at) VALUES (?, ?, ?)",
                               ("person", "ann", "2026-03-01T00:00:00+00:00"))
        assert await db.fetchall("SELECT id FROM persons WHERE id IN ()") == []
        assert len(await db.fetchall("SELECT id FROM persons WHERE id NOT IN ()"
                                     " AND name NOT IN () AND name IN (?)",
                                     ("ann",))) == 1
    finally:
        await db.close()
