"""The storage seam: all SQL lives in `strata/memory/`; nothing outside it touches the database
handle.

An AST check over `strata/bot/`, `strata/cognition/` and `strata/adapters/`: no call of a
database-handle method, no string that reads like SQL, and no import of
`strata.memory.engines.db.Database` except where the database is opened and wired (the composition
root, `strata/app/compose.py` and its `memory_wiring.py`). Over those and `strata/memory/`: the
repositories are constructed only by the composition root (`strata.app.memory_wiring.Repos`) and
handed to whoever uses them; inside `strata/memory/` a few functions over a database handle still
build the repository they read through (listed below: shrink the list, never grow it).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
OUTSIDE = ["strata/bot", "strata/cognition", "strata/adapters", "strata/app"]

# Methods of `strata.memory.engines.db.Database` / `ReaderPool` and of the driver's connection
# and cursor.
HANDLE_METHODS = {
    "execute", "executemany", "executescript", "execute_write", "executemany_write",
    "fetchall", "fetchone", "fetchval", "fetchmany", "checkpoint",
}
SQL = re.compile(
    r"\b(SELECT\s+(\*|[\w(]+.*\bFROM\b)|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|"
    r"DELETE\s+FROM|CREATE\s+(TABLE|INDEX|TRIGGER|VIRTUAL)|DROP\s+(TABLE|INDEX)|PRAGMA\s+\w+|"
    r"WHERE\s+\w+(\.\w+)?\s*(=|IN\b|IS\b|>|<))"
)
# The composition root opens the database and wires everything over it.
DATABASE_IMPORTERS = {"strata/app/compose.py", "strata/app/memory_wiring.py"}
# The repository classes (`strata.app.memory_wiring.Repos` holds one of each).
REPOSITORIES = {
    "PersonRepo", "ChannelRepo", "TranscriptRepo", "EpisodeRepo", "FactRepo", "JobRunRepo",
    "ReminderRepo", "PortraitRepo", "CalendarRepo", "LinkCodes",
}
# Who may construct one: the composition root, and memory functions that take a database
# handle and read through the repository of their own table (not handed to anyone else).
REPOSITORY_BUILDERS = {
    "strata/app/compose.py",
    "strata/app/memory_wiring.py",
    "strata/memory/coordination/jobruns.py",
    "strata/memory/store/lifecycle.py",
    "strata/memory/store/recall_reads.py",
    "strata/memory/store/transcript.py",
}


def _modules(packages: list[str] = OUTSIDE) -> list[tuple[str, ast.Module]]:
    return [
        (str(p.relative_to(ROOT)), ast.parse(p.read_text(), str(p)))
        for pkg in packages
        for p in sorted((ROOT / pkg).rglob("*.py"))
    ]


def repository_constructions(tree: ast.Module) -> list[str]:
    """`PersonRepo(db)` and the like (a call of a repository class by name or attribute)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(
                f, ast.Attribute) else None
            if name in REPOSITORIES:
                found.append(f"line {node.lineno}: {name}()")
    return found


def handle_calls(tree: ast.Module) -> list[str]:
    """`x.fetchall(…)` and the like, and `async with x.write()` (a write transaction)."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in HANDLE_METHODS):
            found.append(f"line {node.lineno}: .{node.func.attr}()")
        if isinstance(node, ast.AsyncWith):
            for item in node.items:
                call = item.context_expr
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and call.func.attr in {"write", "transaction"}):
                    found.append(f"line {node.lineno}: async with .{call.func.attr}()")
    return found


def sql_strings(tree: ast.Module) -> list[str]:
    return [f"line {node.lineno}: {node.value[:60]!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and SQL.search(node.value)]


def database_imports(tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "strata.memory.engines.db":
            found += [f"line {node.lineno}: {a.name}" for a in node.names if a.name == "Database"]
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: {a.name}" for a in node.names
                      if a.name == "strata.memory.engines.db"]
    return found


def test_the_checks_catch_what_they_look_for() -> None:
    """Each check fires on a sample of what it forbids and stays quiet on ordinary code."""
    bad = ast.parse(
        "from strata.memory.engines.db import Database\n"
        "async def f(db):\n"
        "    await db.fetchval('SELECT count(*) FROM transcript WHERE owner_id = ?', (1,))\n"
        "    async with db.write() as conn:\n"
        "        await conn.execute(f'DELETE FROM facts WHERE id IN ({marks})')\n"
    )
    assert len(handle_calls(bad)) == 3
    assert len(sql_strings(bad)) == 2
    assert database_imports(bad) == ["line 1: Database"]
    built = ast.parse("import strata.memory.store.facts\n"
                      "def f(db):\n"
                      "    return PersonRepo(db), strata.memory.store.facts.FactRepo(db),"
                      " Repos.over(db)\n")
    assert repository_constructions(built) == ["line 3: PersonRepo()", "line 3: FactRepo()"]
    fine = ast.parse(
        "async def f(repo, out):\n"
        "    out.write('Select a person; delete from the list with /forget')\n"
        "    return await repo.count(1)\n"
    )
    assert handle_calls(fine) == [] and sql_strings(fine) == [] and database_imports(fine) == []
    assert repository_constructions(fine) == []


def test_no_module_outside_memory_runs_sql() -> None:
    offenders = {name: handle_calls(tree) + sql_strings(tree) for name, tree in _modules()}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_only_the_composition_root_imports_the_database() -> None:
    importers = {name for name, tree in _modules() if database_imports(tree)}
    assert importers <= DATABASE_IMPORTERS, sorted(importers - DATABASE_IMPORTERS)


def test_repositories_are_built_only_by_the_composition_root() -> None:
    builders = {name for name, tree in _modules([*OUTSIDE, "strata/memory"])
                if repository_constructions(tree)}
    assert builders <= REPOSITORY_BUILDERS, sorted(builders - REPOSITORY_BUILDERS)


def test_jobs_never_see_the_database() -> None:
    """What the runner hands every job (`strata.cognition.services.Services`) has no database."""
    from dataclasses import fields

    from strata.cognition.services import Services
    from strata.memory.engines.db import Database

    assert all(f.type not in ("Database", Database) for f in fields(Services))
    assert "db" not in {f.name for f in fields(Services)}


def test_the_composition_root_does_not_patch_the_turn_processor() -> None:
    """`App.create` builds the turn processor with all its parts: no attribute of it is set,
    and none of its lists extended, after it exists."""
    tree = ast.parse((ROOT / "strata/app/compose.py").read_text())

    def on_processor(node: ast.expr) -> bool:
        while isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "processor":
                return True
            node = node.value
        return False

    patches = [
        f"line {node.lineno}" for node in ast.walk(tree)
        if (isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
            and any(on_processor(t) for t in (node.targets if isinstance(node, ast.Assign)
                                              else [node.target])))
        or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"append", "extend", "insert", "register"}
            and on_processor(node.func.value))
    ]
    assert patches == []
