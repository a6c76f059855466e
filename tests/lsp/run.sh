#!/usr/bin/env bash
# The LSP protocol tier: tests/lsp/test/*.test.js under Node's built-in test runner, each test
# driving `cellscope lsp` through vscode-jsonrpc / vscode-languageserver-protocol.
#   CELLSCOPE_BIN   the server binary (default: build/cellscope, relative to the repository root)
# The npm dependencies must be installed (scripts/setup.sh runs `npm ci` here); a missing or
# stale node_modules is a failure, never a skip.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"
tier_init lsp-protocol
need_node
need_npm "$here"
need_bin

cd "$here"
exec node --test --test-reporter=spec test/
