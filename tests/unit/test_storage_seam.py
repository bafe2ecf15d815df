"""The storage seam: all SQL lives in `memory/`; nothing outside it touches the database handle.

An AST check over `bot/`, `cognition/` and `adapters/`: no call of a database-handle method,
no string that reads like SQL, and no import of `memory.db.Database` except where the database
is opened and wired (the composition root) or where a module still holds the handle only to
pass it on (listed below, to be narrowed to repositories).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
OUTSIDE = ["bot", "cognition", "adapters"]

# Methods of `memory.db.Database` / `ReaderPool` and of the driver's connection and cursor.
HANDLE_METHODS = {
    "execute", "executemany", "executescript", "execute_write", "executemany_write",
    "fetchall", "fetchone", "fetchval", "fetchmany", "checkpoint",
}
SQL = re.compile(
    r"\b(SELECT\s+(\*|[\w(]+.*\bFROM\b)|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|"
    r"DELETE\s+FROM|CREATE\s+(TABLE|INDEX|TRIGGER|VIRTUAL)|DROP\s+(TABLE|INDEX)|PRAGMA\s+\w+|"
    r"WHERE\s+\w+(\.\w+)?\s*(=|IN\b|IS\b|>|<))"
)
# The composition root opens the database; these modules still hold the handle to pass it to
# memory functions (not to run SQL). Shrink this list, never grow it.
DATABASE_IMPORTERS = {
    "bot/app.py",
    "cognition/services.py",
}


def _modules() -> list[tuple[str, ast.Module]]:
    return [
        (str(p.relative_to(ROOT)), ast.parse(p.read_text(), str(p)))
        for pkg in OUTSIDE
        for p in sorted((ROOT / pkg).rglob("*.py"))
    ]


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
        if isinstance(node, ast.ImportFrom) and node.module == "memory.db":
            found += [f"line {node.lineno}: {a.name}" for a in node.names if a.name == "Database"]
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: {a.name}" for a in node.names if a.name == "memory.db"]
    return found


def test_the_checks_catch_what_they_look_for() -> None:
    """Each check fires on a sample of what it forbids and stays quiet on ordinary code."""
    bad = ast.parse(
        "from memory.db import Database\n"
        "async def f(db):\n"
        "    await db.fetchval('SELECT count(*) FROM transcript WHERE owner_id = ?', (1,))\n"
        "    async with db.write() as conn:\n"
        "        await conn.execute(f'DELETE FROM facts WHERE id IN ({marks})')\n"
    )
    assert len(handle_calls(bad)) == 3
    assert len(sql_strings(bad)) == 2
    assert database_imports(bad) == ["line 1: Database"]
    fine = ast.parse(
        "async def f(repo, out):\n"
        "    out.write('Select a person; delete from the list with /forget')\n"
        "    return await repo.count(1)\n"
    )
    assert handle_calls(fine) == [] and sql_strings(fine) == [] and database_imports(fine) == []


def test_no_module_outside_memory_runs_sql() -> None:
    offenders = {name: handle_calls(tree) + sql_strings(tree) for name, tree in _modules()}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_only_the_composition_root_imports_the_database() -> None:
    importers = {name for name, tree in _modules() if database_imports(tree)}
    assert importers <= DATABASE_IMPORTERS, sorted(importers - DATABASE_IMPORTERS)
