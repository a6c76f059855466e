#!/usr/bin/env bash
# The DAP protocol tier: tests/dap/test/*.test.js under Node's built-in test runner, each test
# driving `cellscope dap` through @vscode/debugadapter-testsupport's DebugClient.
#   CELLSCOPE_BIN   the adapter binary (default: build/cellscope, relative to the repository root)
# The npm dependencies must be installed (`bash scripts/npm-deps.sh tests/dap install`); a missing
# or stale node_modules is a failure, never a skip.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export CELLSCOPE_BIN=${CELLSCOPE_BIN:-build/cellscope}
[[ "$CELLSCOPE_BIN" = /* ]] || CELLSCOPE_BIN="$repo/$CELLSCOPE_BIN"

if ! command -v node >/dev/null 2>&1; then
  echo "dap-protocol: node is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
if ! bash "$repo/scripts/npm-deps.sh" "$here" check; then
  echo "dap-protocol: run 'bash scripts/npm-deps.sh tests/dap install' first" >&2
  exit 1
fi
if [[ ! -x "$CELLSCOPE_BIN" ]]; then
  echo "dap-protocol: $CELLSCOPE_BIN is not built" >&2
  exit 1
fi

cd "$here"
exec node --test --test-reporter=spec --test-concurrency=1 test/
