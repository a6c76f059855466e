#!/usr/bin/env bash
# The DAP protocol tier: tests/dap/test/*.test.js under Node's built-in test runner, each test
# driving `cellscope dap` through @vscode/debugadapter-testsupport's DebugClient.
#   CELLSCOPE_BIN   the adapter binary (default: build/cellscope, relative to the repository root)
# The npm dependencies must be installed (`bash scripts/npm-deps.sh tests/dap install`); a missing
# or stale node_modules is a failure, never a skip.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"
tier_init dap-protocol
need_node
need_npm "$here"
need_bin

cd "$here"
exec node --test --test-reporter=spec --test-concurrency=1 test/
