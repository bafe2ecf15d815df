"""The package metadata keeps to what its build backend will accept after its deprecations."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).parents[2]


def test_license_is_an_spdx_expression_the_build_backend_understands() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    # The `{ text = ... }` table is deprecated by setuptools and refused from February 2027.
    assert data["project"]["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    # SPDX strings in `project.license` need setuptools 77 or later.
    setuptools = next(Requirement(r) for r in data["build-system"]["requires"]
                      if Requirement(r).name == "setuptools")
    assert setuptools.specifier.contains("77.0") and not setuptools.specifier.contains("76.9")
    assert all(Version(s.version) >= Version("77") for s in setuptools.specifier
               if s.operator in (">=", "=="))


def test_the_wheel_installs_only_the_strata_package(tmp_path: Path) -> None:
    """`pip install .` puts one top-level package into site-packages: `strata`. Generic names
    (`bot`, `memory`, `adapters`) would clobber, or be clobbered by, other projects' packages.
    Builds the real wheel from a copy of the sources (setuptools builds in the source tree), with
    no dependencies and no build isolation: the dev extra brings a recent setuptools."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "strata", src / "strata",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(src)],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = tmp_path.glob("strata-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"strata"}
    # The data files travel with the code: migrations, the web view's templates.
    assert any(n.startswith("strata/memory/engines/migrations/") and n.endswith(".sql")
               for n in names)
    assert any(n.startswith("strata/memory/engines/pg/migrations/") and n.endswith(".sql")
               for n in names)
    assert any(n.startswith("strata/app/web/templates/") for n in names)
