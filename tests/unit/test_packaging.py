"""The package metadata keeps to what its build backend will accept after its deprecations."""

from __future__ import annotations

import tomllib
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
