#!/usr/bin/env bash
# The locked npm dependencies of one package directory of the repository (webview/, tests/lsp/,
# extension/, ...).
#   npm-deps.sh DIR check     exit 0 when DIR/node_modules matches package.json + package-lock.json
#   npm-deps.sh DIR install   run `npm ci` in DIR when node_modules is missing or stale
# Fresh means: a stamp written after the last `npm ci` holds the checksum of package.json and
# package-lock.json, and every locked package is present at its locked version.
set -euo pipefail

if (($# != 2)); then
  echo "usage: $0 DIR check|install" >&2
  exit 2
fi
dir=$1
cd "$dir"
name=$(basename "$(pwd)")
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
      if (!fs.existsSync(p + "/package.json")) {
        if (info.optional) continue;
        throw new Error(p + " is missing");
      }
      const pkg = JSON.parse(fs.readFileSync(p + "/package.json", "utf8"));
      if (pkg.version !== info.version) throw new Error(p + " is " + pkg.version + ", locked " + info.version);
    }' 2>/dev/null
}

case "$2" in
  check)
    if ! fresh; then
      echo "$dir: node_modules is missing or stale (run: bash scripts/npm-deps.sh $dir install)" >&2
      exit 1
    fi
    ;;
  install)
    if fresh; then exit 0; fi
    if ! command -v npm >/dev/null 2>&1; then
      echo "$dir: npm is not installed" >&2
      exit 1
    fi
    echo "[setup] npm ci in $name" >&2
    npm ci --no-audit --no-fund --loglevel=error >&2
    checksum >"$stamp"
    fresh || { echo "$dir: node_modules still stale after npm ci" >&2; exit 1; }
    ;;
  *)
    echo "usage: $0 DIR check|install" >&2
    exit 2
    ;;
esac
