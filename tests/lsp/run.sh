#!/usr/bin/env bash
# The LSP protocol tier: tests/lsp/test/*.test.js under Node's built-in test runner, each test
# driving `cellscope lsp` through vscode-jsonrpc / vscode-languageserver-protocol.
#   CELLSCOPE_BIN   the server binary (default: build/cellscope, relative to the repository root)
# The npm dependencies must be installed (scripts/setup.sh runs `npm ci` here); a missing or
# stale node_modules is a failure, never a skip.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export CELLSCOPE_BIN=${CELLSCOPE_BIN:-build/cellscope}
[[ "$CELLSCOPE_BIN" = /* ]] || CELLSCOPE_BIN="$repo/$CELLSCOPE_BIN"

if ! command -v node >/dev/null 2>&1; then
  echo "lsp-protocol: node is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
if ! bash "$here/deps.sh" check; then
  echo "lsp-protocol: run 'bash tests/lsp/deps.sh install' (or scripts/setup.sh) first" >&2
  exit 1
fi
if [[ ! -x "$CELLSCOPE_BIN" ]]; then
  echo "lsp-protocol: $CELLSCOPE_BIN is not built" >&2
  exit 1
fi

cd "$here"
exec node --test --test-reporter=spec test/
