#!/usr/bin/env bash
# Install everything the tests need into ./.venv (and a real Synapse homeserver into
# ./.synapse-venv for the Matrix tests), then run the whole suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'
STRATA_SYNAPSE_VENV=${STRATA_SYNAPSE_VENV:-$PWD/.synapse-venv} bash tests/fakes/install_synapse.sh
export STRATA_SYNAPSE_VENV=${STRATA_SYNAPSE_VENV:-$PWD/.synapse-venv}
set +e
.venv/bin/python -m pytest "$@"
code=$?
set -e
if [ "$code" -eq 5 ]; then
  echo "test.sh: pytest collected no tests - that is a failure" >&2
  exit 1
fi
exit "$code"
