"""The dependency direction of DESIGN.md §1, and the project's static checks."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_import_contracts_hold() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is part of the dev extra"
    out = subprocess.run([exe, "--no-logo"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_only_the_llm_module_imports_openai() -> None:
    offenders = [str(p.relative_to(ROOT)) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
                 if any(n == "openai" or n.startswith("openai.") for n in _imports(p))
                 and p != ROOT / "strata" / "bot" / "llm.py"]
    assert offenders == []


def test_heavy_clustering_imports_stay_off_startup() -> None:
    """umap/hdbscan cost seconds to import: never at module level of the start-up path."""
    code = ("import sys, strata.app.cli, strata.app.compose, strata.bot.turns; "
            "print(','.join(m for m in ('umap', 'hdbscan', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("tool", ["ruff", "mypy"])
def test_static_checks_are_clean(tool: str) -> None:
    exe = shutil.which(tool, path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip(f"{tool} not installed")
    args = [exe, "check", *PACKAGES] if tool == "ruff" else [exe]
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
