"""Every third-party module `strata` imports comes from a distribution pyproject.toml declares
(in `dependencies` or an extra other than `dev`): a `pip install 'strata[...]'` never meets an
ImportError the metadata did not warn of, and the installed package imports nothing from the
repository around it (`bench`, `tests`)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterable
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).parents[2]


def imported_top_levels(package: Path) -> dict[str, str]:
    """Each absolute import's top-level name, with one file that imports it."""
    found: dict[str, str] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.partition(".")[0], str(path.relative_to(package.parent)))
    return found


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_distributions(pyproject: dict) -> set[str]:
    """The distributions an install of the package can ask for: its dependencies and every
    extra except `dev` (the test tools), by canonical name."""
    project = pyproject["project"]
    groups = [project.get("dependencies", [])]
    groups += [reqs for extra, reqs in project.get("optional-dependencies", {}).items()
               if extra != "dev"]
    names = set()
    for req in (r for group in groups for r in group):
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", req)
        assert match, req
        names.add(_canonical(match.group()))
    return names


def undeclared(imports: dict[str, str], declared: Iterable[str]) -> list[str]:
    """The imports no declared distribution provides, as `module (file)`."""
    providers = packages_distributions()
    wanted = set(declared)
    missing = []
    for module, where in sorted(imports.items()):
        if module == "strata" or module in sys.stdlib_module_names:
            continue
        dists = {_canonical(d) for d in providers.get(module, [])}
        if not dists & wanted:
            missing.append(f"{module} ({where})")
    return missing


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_imported_third_party_module_is_declared() -> None:
    found = undeclared(imported_top_levels(ROOT / "strata"), declared_distributions(_pyproject()))
    assert found == []


def test_a_missing_declaration_is_found() -> None:
    """The check above can fail: without `httpx` and `numpy` in the metadata, both are named."""
    declared = declared_distributions(_pyproject()) - {"httpx", "numpy"}
    missing = undeclared(imported_top_levels(ROOT / "strata"), declared)
    assert {m.partition(" ")[0] for m in missing} == {"httpx", "numpy"}


def test_a_module_of_no_distribution_is_found(tmp_path: Path) -> None:
    """An import of the repository's own folders (`bench`, `tests`), which the wheel does not
    ship, is an undeclared module too."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text("import bench.engines\nfrom tests import fakes\nimport json\n")
    assert undeclared(imported_top_levels(package), declared_distributions(_pyproject())) == [
        "bench (pkg/m.py)", "tests (pkg/m.py)"]


def _loads_by_name(package: Path) -> list[tuple[str, str]]:
    """Each call that imports or finds a module by a name in a string, with that name (or `?`
    when it is computed), and the file it is in."""
    loaders = {"import_module", "find_spec", "__import__"}
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in loaders:
                arg = node.args[0]
                text = arg.value if isinstance(arg, ast.Constant) else "?"
                found.append((str(text), str(path.relative_to(package.parent))))
    return found


def test_no_module_of_the_project_is_loaded_by_name() -> None:
    """A module the linter cannot see imported is one its contracts cannot keep in its layer:
    the project imports its own modules with `import`, and its plugins through entry points.
    By name are only third-party modules whose absence is expected (the SQLite drivers, the
    `local` extra)."""
    loads = _loads_by_name(ROOT / "strata")
    assert loads, "the walk finds the known third-party look-ups"
    ours = [(name, where) for name, where in loads
            if name.partition(".")[0] in {"strata", "bench", "tests"}]
    computed = {where for name, where in loads if name == "?"}
    assert ours == []
    # A computed name is a list of third-party drivers or packages, checked by eye here.
    assert computed <= {"strata/memory/engines/driver.py", "strata/bot/embedded.py",
                        "strata/bot/weights.py"}
