"""A command that uses no model takes the database's own embedding dimension: a database the
embedded model made (384 dimensions) is read by `memory show`, `jobs status` and the rest
with the default configuration (768), as the README's commands are run after the quick start.
A dimension set on purpose is still checked, with a clear error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from strata.bot.embedded import EMBEDDED_DIM
from strata.memory.engines.db import Database
from strata.memory.engines.sqlite_open import stored_dim
from strata.memory.store.persons import PersonRepo
from tests.integration.test_backup import ROOT

T0 = __import__("datetime").datetime(2026, 1, 5, 9, 0, tzinfo=__import__("datetime").UTC)


@pytest.mark.sqlite_only("a SQLite file made at one dimension, read with the default")
async def test_commands_without_a_model_read_a_database_of_another_dimension(
        tmp_path: Path) -> None:
    path = tmp_path / "strata.db"
    db = await Database.open(path, 384)
    try:
        await PersonRepo(db).get_or_create("console:alice", "alice", T0)
    finally:
        await db.close()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "STRATA_DB": str(path),
           "XDG_DATA_HOME": str(tmp_path / "data")}

    def strata(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "strata.app.cli", *args], env={**env, **extra},
                              cwd=ROOT, capture_output=True, text=True, timeout=120)

    for args in (["memory", "show", "--user", "alice"], ["memory", "facts", "--user", "alice"],
                 ["memory", "episodes", "--user", "alice"], ["jobs", "status"],
                 ["db", "check"]):
        done = strata(*args)
        assert done.returncode == 0, (args, done.stderr)
        assert "dimension" not in done.stderr, args
    chosen = strata("memory", "show", "--user", "alice", STRATA_EMBED_DIM="768")
    assert chosen.returncode == 2
    assert "created with embedding dimension 384, but 768 is configured" in chosen.stderr


@pytest.mark.sqlite_only("a new SQLite file made by `strata db migrate`")
def test_db_migrate_makes_a_new_database_the_embedded_embedder_can_use(tmp_path: Path) -> None:
    """With no embedding server configured or answering, `strata chat` embeds with the embedded
    e5 model (384 dimensions); a database `strata db migrate` created beforehand must have that
    dimension, or the first chat refuses it. A configured server keeps the configured size."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "XDG_DATA_HOME": str(tmp_path / "data"),
           # Nothing answers here, as on a machine with no Ollama.
           "STRATA_LLM_BASE_URL": "http://127.0.0.1:9/v1"}

    def migrate(path: Path, **extra: str) -> int | None:
        done = subprocess.run([sys.executable, "-m", "strata.app.cli", "db", "migrate"],
                              env={**env, "STRATA_DB": str(path), **extra}, cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return __import__("asyncio").run(stored_dim(path))

    assert migrate(tmp_path / "embedded.db") == EMBEDDED_DIM
    configured = migrate(tmp_path / "server.db",
                         STRATA_EMBED_BASE_URL="http://127.0.0.1:9/v1")
    assert configured == 768
