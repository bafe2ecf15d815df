"""Architecture rules that are plain Python and fast: which module may import openai, and what
stays off the start-up path. ruff, mypy, the import-linter layers (docs/architecture.md) and
the size rule run in checks.sh, a CI step of their own before the tests."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGES = ["strata"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_only_the_model_sdk_module_imports_openai() -> None:
    offenders = [str(p.relative_to(ROOT)) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
                 if any(n == "openai" or n.startswith("openai.") for n in _imports(p))
                 and p != ROOT / "strata" / "bot" / "llm_sdk.py"]
    assert offenders == []


def test_heavy_clustering_imports_stay_off_startup() -> None:
    """umap/hdbscan cost seconds to import: never at module level of the start-up path."""
    code = ("import sys, strata.app.cli, strata.app.compose, strata.bot.turns; "
            "print(','.join(m for m in ('umap', 'hdbscan', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""

