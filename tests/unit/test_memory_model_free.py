"""`strata.memory` calls no model (issue #36, one model path): model work that writes memory
is asked in cognition (`strata.bot.writers`) and reaches a store only through memory's
checks. The model's port (`ChatModel`) lives in `strata.core.ports` beside ports memory does
use (`Clock`, `Embedder`), so an import-linter contract cannot tell them apart: this test reads
every module of `strata/memory` instead."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MEMORY = Path(__file__).parents[2] / "strata" / "memory"
# The model's types and clients: memory names none of them.
MODEL_NAMES = {"ChatModel", "Completion", "MeteredChat", "OpenAIChatModel", "EmbeddedModels"}
MODEL_MODULES = ("openai", "xllamacpp", "strata.bot", "strata.cognition")
# A database's row stream (`Database.stream`) is not a model's: the storage engines may call it.
ENGINES = MEMORY / "engines"


def problems(tree: ast.AST, path: Path) -> list[str]:
    """Where a module names the model, imports a model client or calls a model method."""
    found = []
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom | ast.Import):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            modules += [a.name for a in node.names if isinstance(node, ast.Import)]
            found += [f"{where}: imports {m}" for m in modules if m.startswith(MODEL_MODULES)]
            found += [f"{where}: imports {a.name}" for a in node.names if a.name in MODEL_NAMES]
        elif isinstance(node, ast.Name) and node.id in MODEL_NAMES:
            found.append(f"{where}: names {node.id}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method == "complete" or (method == "stream" and ENGINES not in path.parents):
                found.append(f"{where}: calls .{method}(")
    return found


def modules() -> list[Path]:
    return sorted(MEMORY.rglob("*.py"))


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(MEMORY)))
def test_memory_module_calls_no_model(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert problems(tree, path) == []


def test_the_check_finds_a_model_call() -> None:
    source = ("from strata.core.ports import ChatModel\n"
              "async def f(chat: ChatModel) -> None:\n"
              "    await chat.complete([])\n"
              "    chat.stream([])\n")
    found = problems(ast.parse(source), MEMORY / "domain" / "x.py")
    assert sorted(f.split(": ", 1)[1] for f in found) == [
        "calls .complete(", "calls .stream(", "imports ChatModel", "names ChatModel"]
    # The engines' own row stream is a database's, not a model's.
    assert problems(ast.parse("db.stream('SELECT 1')"), ENGINES / "transfer.py") == []
