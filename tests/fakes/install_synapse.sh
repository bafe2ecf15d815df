#!/usr/bin/env bash
# Install a real Synapse homeserver into its own virtualenv for the Matrix adapter tests.
#
# Usage: tests/fakes/install_synapse.sh [VENV_PATH]
#
# VENV_PATH defaults to $STRATA_SYNAPSE_VENV, then /work/.synapse-venv. Synapse lives in a
# separate venv so its (large, Twisted-based) dependency tree never touches the project's
# own environment; tests/fakes/synapse.py runs it as a subprocess with that venv's python.
#
# Idempotent: if the venv already imports synapse the script exits at once (~0.3 s).
# Set SYNAPSE_VERSION (e.g. "==1.163.2") to pin; set PYTHON to choose the interpreter.
set -euo pipefail

venv="${1:-${STRATA_SYNAPSE_VENV:-/work/.synapse-venv}}"
python="${PYTHON:-python3}"
spec="matrix-synapse${SYNAPSE_VERSION:-}"

probe="import synapse, importlib.util as u; assert u.find_spec('synapse.app.homeserver'); print(synapse.__version__)"

if [[ -x "$venv/bin/python" ]] && version="$("$venv/bin/python" -c "$probe" 2>/dev/null)"; then
    echo "synapse $version already installed in $venv"
    exit 0
fi

start=$(date +%s)
if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$spec"
version="$("$venv/bin/python" -c "$probe")"
echo "installed synapse $version into $venv in $(( $(date +%s) - start ))s"
