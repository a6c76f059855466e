#!/usr/bin/env bash
# The ONNX export tier: PyPI onnx (checker) and onnxruntime in a venv this script creates when it
# is missing (the same venv bench/speed_compare.py uses for PyTorch and onnxruntime).
#   CELLSCOPE_TORCH_VENV   venv location (default: $HOME/.cache/cellscope/torchvenv)
#   BUILD_DIR              build directory holding cellscope and bench/cellscope-run
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV="${CELLSCOPE_TORCH_VENV:-$HOME/.cache/cellscope/torchvenv}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "run_onnx.sh: creating venv $VENV"
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import onnx, onnxruntime, numpy' 2>/dev/null; then
  echo "run_onnx.sh: pip install onnx onnxruntime numpy into $VENV"
  "$VENV/bin/python" -m pip install --quiet "onnx>=1.16" "onnxruntime>=1.18" numpy
fi
"$VENV/bin/python" "$ROOT/tests/runtime/check_onnx.py" --bin "$BUILD_DIR/cellscope" \
  --run "$BUILD_DIR/bench/cellscope-run"
# Above 2 GiB: external data (a generated 2.15 GB model; about 45 s).
exec "$VENV/bin/python" "$ROOT/tests/runtime/check_onnx_external.py" --bin "$BUILD_DIR/cellscope" \
  --run "$BUILD_DIR/bench/cellscope-run"
