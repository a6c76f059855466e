#!/usr/bin/env bash
# Makes (or brings up to date) the MindSpore venv the MindSpore tier, the real-world tier and the
# extension's msrun end-to-end test run MindSpore 2.10 in: tests/mindspore/requirements.txt
# (pinned) installed with pip from PyPI. Prints nothing but its own progress lines; exits non-zero
# with the reason when the venv cannot be made.
#   CELLSCOPE_MS_VENV   venv location (default: $HOME/.cache/cellscope/msvenv)
#   CELLSCOPE_PYTHON    python used to create the venv (default: python3)
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${CELLSCOPE_MS_VENV:-$HOME/.cache/cellscope/msvenv}"
PY="${CELLSCOPE_PYTHON:-python3}"
REQ="$ROOT/tests/mindspore/requirements.txt"

fail() { echo "msvenv.sh: error: $*" >&2; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
    echo "msvenv.sh: creating venv $VENV with $($PY --version 2>&1)"
    mkdir -p "$(dirname "$VENV")" || fail "cannot create $(dirname "$VENV")"
    "$PY" -m venv "$VENV" || fail "'$PY -m venv $VENV' failed (is python3-venv installed?)"
fi

echo "msvenv.sh: pip install -r $REQ"
if ! "$VENV/bin/python" -m pip install -q -r "$REQ"; then
    fail "pip could not install the pinned requirements (see pip's output above).
MindSpore 2.10.0 publishes CPU wheels for CPython 3.9-3.11 on Linux x86_64/aarch64 only;
set CELLSCOPE_PYTHON to a supported interpreter or CELLSCOPE_MS_VENV to an existing venv."
fi

"$VENV/bin/python" -c "import mindspore, numpy; print('msvenv.sh: mindspore', mindspore.__version__, 'numpy', numpy.__version__)" \
    || fail "mindspore is installed but cannot be imported in $VENV"
