#!/usr/bin/env bash
# The netron tier: Netron (its PyPI package serves its viewer) opens the .mindir and .onnx that
# `cellscope export` writes for LeNet-5 and ResNet-50 in Debian's headless chromium, and draws as
# many nodes as the file holds (tests/runtime/check_netron.mjs). The venv is created and netron
# installed from PyPI when missing, never skipped. Screenshots: $BUILD_DIR/test-artifacts/netron.
#   CELLSCOPE_NETRON_VENV  venv location (default: $HOME/.cache/cellscope/netronvenv)
#   BUILD_DIR              build directory holding cellscope
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"
tier_init netron
VENV="${CELLSCOPE_NETRON_VENV:-$HOME/.cache/cellscope/netronvenv}"
[[ -x /usr/bin/chromium ]] || tier_fail "/usr/bin/chromium is missing (scripts/setup.sh installs Debian's chromium)"
need_node
need_npm "$REPO/webview"
need_bin
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "run_netron.sh: creating venv $VENV"
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import netron' 2>/dev/null; then
  echo "run_netron.sh: pip install netron into $VENV"
  "$VENV/bin/python" -m pip install --quiet netron || tier_fail "pip install netron failed"
fi
artifacts="$BUILD_DIR/test-artifacts/netron"
[[ "$artifacts" = /* ]] || artifacts="$REPO/$artifacts"
exec env CELLSCOPE_ARTIFACTS="$artifacts" node "$here/check_netron.mjs" --python "$VENV/bin/python"
