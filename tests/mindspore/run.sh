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
REQ="$HERE/requirements.txt"

fail() { echo "run.sh: error: $*" >&2; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
    echo "run.sh: creating venv $VENV with $($PY --version 2>&1)"
    mkdir -p "$(dirname "$VENV")" || fail "cannot create $(dirname "$VENV")"
    "$PY" -m venv "$VENV" || fail "'$PY -m venv $VENV' failed (is python3-venv installed?)"
fi

echo "run.sh: pip install -r $REQ"
if ! "$VENV/bin/python" -m pip install -r "$REQ"; then
    fail "pip could not install the pinned requirements (see pip's output above).
MindSpore 2.10.0 publishes CPU wheels for CPython 3.9-3.11 on Linux x86_64/aarch64 only;
set CELLSCOPE_PYTHON to a supported interpreter or CELLSCOPE_MS_VENV to an existing venv."
fi

"$VENV/bin/python" -c "import mindspore, numpy; print('run.sh: mindspore', mindspore.__version__, 'numpy', numpy.__version__)" \
    || fail "mindspore is installed but cannot be imported in $VENV"

cd "$REPO_ROOT" || fail "cannot cd to $REPO_ROOT"
# --durations: the slowest tests, so the CI time budget can be kept (README). -n: pytest-xdist's
# workers (CELLSCOPE_MS_WORKERS, default 2; 0 runs the tests in this process, one at a time).
exec "$VENV/bin/python" -m pytest tests/mindspore -v -rs --durations=12 \
    -n "${CELLSCOPE_MS_WORKERS:-2}" "$@"
