#!/usr/bin/env bash
# The npm dependencies of the reliability tier (tests/reliability/package-lock.json).
#   deps.sh check     exit 0 when node_modules matches package.json + package-lock.json
#   deps.sh install   run `npm ci` when node_modules is missing or stale (else nothing)
exec bash "$(dirname "$0")/../../scripts/npm-deps.sh" "$(dirname "$0")" "${1:-check}"
