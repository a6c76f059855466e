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
repo=$(cd "$webview/.." && pwd)
export CELLSCOPE_BIN=${CELLSCOPE_BIN:-build/cellscope}
[[ "$CELLSCOPE_BIN" = /* ]] || CELLSCOPE_BIN="$repo/$CELLSCOPE_BIN"

if [[ ! -x /usr/bin/chromium ]]; then
  echo "view: /usr/bin/chromium is missing (scripts/setup.sh installs Debian's chromium)" >&2
  exit 1
fi
bash "$repo/scripts/npm-deps.sh" "$webview" check
bash "$repo/scripts/npm-deps.sh" "$repo/tests/lsp" check
if [[ ! -x "$CELLSCOPE_BIN" ]]; then
  echo "view: $CELLSCOPE_BIN is not built" >&2
  exit 1
fi
cd "$webview"
npm run --silent check
npm test --silent
node --test --test-reporter=spec test/browser/*.test.mjs
artifacts=${CELLSCOPE_ARTIFACTS:-$repo/build/test-artifacts/view}
mkdir -p "$artifacts"
exec node "$repo/tests/reliability/view-load.mjs" --ci --bin "$CELLSCOPE_BIN" --json "$artifacts/view-load.json"
