#!/usr/bin/env bash
# Run the MindSpore ground-truth tier (tests/mindspore) in a dedicated venv.
#   CELLSCOPE_MS_VENV   venv location (default: $HOME/.cache/cellscope/msvenv)
#   CELLSCOPE_PYTHON    python used to create the venv (default: python3)
#   CELLSCOPE_BIN       analyser binary (default: build/cellscope, relative to the repo root)
# Extra arguments are passed to pytest, e.g.  tests/mindspore/run.sh -k lenet5
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HERE/../.." && pwd)"
VENV="${CELLSCOPE_MS_VENV:-$HOME/.cache/cellscope/msvenv}"
PY="${CELLSCOPE_PYTHON:-python3}"

fail() { echo "run.sh: error: $*" >&2; exit 1; }

# The venv with the pinned requirements (made or brought up to date; shared with the real-world
# tier and the extension's msrun end-to-end test).
CELLSCOPE_MS_VENV="$VENV" CELLSCOPE_PYTHON="$PY" bash "$REPO_ROOT/scripts/msvenv.sh" || exit 1

cd "$REPO_ROOT" || fail "cannot cd to $REPO_ROOT"
# --durations: the slowest tests, so the CI time budget can be kept (README). -n: pytest-xdist's
# workers (CELLSCOPE_MS_WORKERS, default 2; 0 runs the tests in this process, one at a time).
exec "$VENV/bin/python" -m pytest tests/mindspore -v -rs --durations=12 \
    -n "${CELLSCOPE_MS_WORKERS:-2}" "$@"
