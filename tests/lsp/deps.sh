#!/usr/bin/env bash
# The npm dependencies of the LSP protocol tests (tests/lsp/package-lock.json).
#   deps.sh check     exit 0 when node_modules matches package.json + package-lock.json
#   deps.sh install   run `npm ci` when node_modules is missing or stale (else nothing)
# Fresh means: a stamp written after the last `npm ci` holds the checksum of package.json and
# package-lock.json, and every locked package is present at its locked version.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
stamp=node_modules/.cellscope-deps

checksum() { cat package.json package-lock.json | sha256sum | cut -d' ' -f1; }

fresh() {
  [[ -f "$stamp" && "$(cat "$stamp")" == "$(checksum)" ]] || return 1
  # Every package of the lock file is installed at its version (catches hand-deleted files).
  node -e '
    const fs = require("fs");
    const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
    for (const [p, info] of Object.entries(lock.packages)) {
      if (!p) continue;
      const pkg = JSON.parse(fs.readFileSync(p + "/package.json", "utf8"));
      if (pkg.version !== info.version) throw new Error(p + " is " + pkg.version + ", locked " + info.version);
    }' 2>/dev/null
}

case "${1:-check}" in
  check)
    if ! fresh; then
      echo "tests/lsp: node_modules is missing or stale" >&2
      exit 1
    fi
    ;;
  install)
    if fresh; then exit 0; fi
    if ! command -v npm >/dev/null 2>&1; then
      echo "tests/lsp: npm is not installed" >&2
      exit 1
    fi
    echo "[setup] npm ci in tests/lsp" >&2
    npm ci --no-audit --no-fund --loglevel=error >&2
    checksum >"$stamp"
    fresh || { echo "tests/lsp: node_modules still stale after npm ci" >&2; exit 1; }
    ;;
  *)
    echo "usage: $0 check|install" >&2
    exit 2
    ;;
esac
