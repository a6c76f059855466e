#!/usr/bin/env bash
# The view tiers: the webview's own checks (tsc --noEmit, unit tests), then the browser tests
# (test/browser/*.mjs: the real `cellscope view` and html snapshots in Debian's chromium, driven by
# playwright-core), then the view server under load (tests/reliability/view-load.mjs --ci: 100
# views, a view that never reads, oversized and fragmented messages, slow-loris, the connection
# limit, out of descriptors; ~40 s). A missing chromium or node_modules is a failure, never a skip
# (scripts/setup.sh installs both; the load test's `ws` client is tests/lsp's).
#   CELLSCOPE_BIN        the binary (default build/cellscope)
#   CELLSCOPE_ARTIFACTS  where screenshots go (default build/test-artifacts/view)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
webview=$(cd "$here/../.." && pwd)
source "$webview/../tests/lib.sh"
tier_init view
repo=$REPO

[[ -x /usr/bin/chromium ]] || tier_fail "/usr/bin/chromium is missing (scripts/setup.sh installs Debian's chromium)"
need_node
need_npm "$webview"
need_npm "$repo/tests/lsp"
need_bin
cd "$webview"
npm run --silent check
npm test --silent
node --test --test-reporter=spec test/browser/*.test.mjs
artifacts=${CELLSCOPE_ARTIFACTS:-$repo/build/test-artifacts/view}
mkdir -p "$artifacts"
exec node "$repo/tests/reliability/view-load.mjs" --ci --bin "$CELLSCOPE_BIN" --json "$artifacts/view-load.json"
