"""The size rule (issues #24, #36): no module in strata/ over 350 lines, no function over 50.

Small modules with one job, small functions with one step: a reader carrying the project on
should be able to hold a module in mind. A module counts its physical lines; a function or
method counts from its `def` line to its last line (`end_lineno - lineno + 1`): decorators
above the `def` are not counted; a nested function counts inside its parent and on its own.
Run by checks.sh as `python -m tests.check_sizes`; exits 1 and names every module and function
over its limit, one a line.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

MAX_MODULE_LINES = 350
MAX_FUNCTION_LINES = 50

# Files exempt from the rule: none. (Kept as a parameter so the check's own test can use it.)
ALLOWED: frozenset[str] = frozenset()

ROOT = Path(__file__).parents[1]


@dataclass(frozen=True)
class Oversize:
    """One module or function over its limit."""

    path: str
    what: str  # "module" or the function's qualified name
    lines: int
    limit: int

    def line(self) -> str:
        return f"{self.path}: {self.what} has {self.lines} lines (limit {self.limit})"


def _functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its dotted name (nested ones too)."""
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((prefix + child.name, child))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def check_file(path: Path, shown: str) -> list[Oversize]:
    """The limits one file breaks (a function's lines run from `def`, not its decorators, to
    its last line)."""
    text = path.read_text(encoding="utf-8")
    found: list[Oversize] = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(Oversize(shown, "module", lines, MAX_MODULE_LINES))
    for name, fn in _functions(ast.parse(text, shown)):
        length = (fn.end_lineno or fn.lineno) - fn.lineno + 1
        if length > MAX_FUNCTION_LINES:
            found.append(Oversize(shown, f"function {name}", length, MAX_FUNCTION_LINES))
    return found


def oversized(root: Path, package: str = "strata",
              allowed: frozenset[str] = ALLOWED) -> list[Oversize]:
    """Every limit broken under root/package, skipping the allowed files."""
    found: list[Oversize] = []
    for path in sorted((root / package).rglob("*.py")):
        shown = path.relative_to(root).as_posix()
        if shown not in allowed:
            found.extend(check_file(path, shown))
    return found


def main() -> int:
    found = oversized(ROOT)
    for item in found:
        print(item.line())
    if found:
        # On stdout after the list, so the summary never lands inside it.
        print(f"check_sizes: {len(found)} over the limits (module {MAX_MODULE_LINES} lines, "
              f"function {MAX_FUNCTION_LINES}); split them by job")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
