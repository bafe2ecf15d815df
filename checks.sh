#!/usr/bin/env bash
# The static checks, a step of their own before the tests (.ci/run runs this, then test.sh):
# ruff, mypy, the import-linter layers, the size rule (tests/check_sizes.py), and no reference
# to a file outside the repository. Any failing check fails the run; all of them run first, so
# one pass names every problem.
set -uo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then  # a fresh clone: the same install test.sh makes
  "${PYTHON:-python3}" -m venv .venv && .venv/bin/python -m pip install -q -e '.[dev]' || exit 1
fi
failed=0
check() {  # check NAME COMMAND...: run one check, remember a failure, go on
  local name=$1
  shift
  echo "checks.sh: $name" >&2
  "$@" || { echo "checks.sh: $name failed" >&2; failed=1; }
}
check ruff .venv/bin/python -m ruff check .
check mypy .venv/bin/python -m mypy
# import-linter has no `python -m` entry: call its command through this venv's interpreter.
check import-linter .venv/bin/python -c \
  "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())" \
  --no-logo
check sizes .venv/bin/python -m tests.check_sizes
# Docs and docstrings cite the project's own docs/, never a design card outside the repository
# (tests/unit/test_docs.py names the file only to forbid it in docs/).
outside() { ! grep -rn --exclude=test_docs.py "DESIGN\.md" strata tests bench docs README.md; }
check "no references outside the repository" outside
exit "$failed"
