#!/usr/bin/env bash
# The VS Code extension (extension/): build, package into a .vsix, test.
#
#   scripts/extension.sh build       webview/dist + extension/dist (tsc strict check included)
#   scripts/extension.sh package     build, then extension/cellscope-<version>.vsix, bundling
#                                    build/cellscope when it is built (last line: the .vsix path)
#   scripts/extension.sh unit        unit tests (node:test, no VS Code)
#   scripts/extension.sh e2e-setup   installs what the end-to-end tier needs (Debian packages,
#                                    code-server 4.100.3 + playwright-core from extension/test/e2e)
#   scripts/extension.sh e2e         package, then the end-to-end tests in code-server + chromium
#                                    (test/e2e/run.mjs, then test/e2e/train.mjs, then
#                                    test/e2e/deploy.mjs, which needs root, then msrun.mjs)
#   scripts/extension.sh e2e-train   package, then only test/e2e/train.mjs (F5 joint train/infer)
#   scripts/extension.sh e2e-msrun   package, then only test/e2e/msrun.mjs (Launch on Cluster,
#                                    with MindSpore's venv: scripts/msvenv.sh)
#   scripts/extension.sh e2e-deploy  package, then only test/e2e/deploy.mjs (Deploy to Ascend
#                                    Device against an agent in a network namespace; root)
#   scripts/extension.sh test        unit, then e2e
#
# Needs Node 20 and npm. The .vsix bundles build/cellscope if it exists (CELLSCOPE_BIN=path
# overrides, CELLSCOPE_BUNDLE=0 leaves it out). Screenshots: extension/test/e2e/artifacts/
# (train.mjs's in artifacts/train/).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EXT="$ROOT/extension"
E2E="$EXT/test/e2e"
# A relative CELLSCOPE_BIN is relative to the caller's directory (the steps below cd elsewhere).
if [[ -n "${CELLSCOPE_BIN:-}" && "$CELLSCOPE_BIN" != /* ]]; then
  export CELLSCOPE_BIN="$PWD/$CELLSCOPE_BIN"
fi

say() { printf '== extension: %s\n' "$*"; }

# npm ci unless node_modules matches the lock file (scripts/npm-deps.sh); extra arguments are
# environment assignments for npm.
npm_ci() {
  local dir="$1"
  shift
  env "$@" bash "$ROOT/scripts/npm-deps.sh" "$dir" install
}

build() {
  npm_ci "$ROOT/webview"
  (cd "$ROOT/webview" && npm run --silent build)
  npm_ci "$EXT"
  (cd "$EXT" && npm run --silent check && npm run --silent build)
}

package() {
  build
  (cd "$EXT" && node scripts/package.mjs)
}

unit() {
  npm_ci "$EXT"
  (cd "$EXT" && npm test)
}

e2e_setup() {
  local need=()
  for p in libkrb5-dev libxkbfile-dev libsecret-1-dev ripgrep chromium; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done
  if ((${#need[@]})); then
    say "apt-get install ${need[*]}"
    if [[ "$(id -u)" == 0 ]]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    else
      sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    fi
  fi
  # @vscode/ripgrep's postinstall downloads ripgrep unless its cache has it: give it Debian's.
  local tmp="${TMPDIR:-/tmp}"
  local cache="$tmp/vscode-ripgrep-cache-1.15.11"
  local tarball="$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
  if [[ ! -f "$tarball" ]]; then
    mkdir -p "$cache"
    local d
    d="$(mktemp -d)"
    cp /usr/bin/rg "$d/rg"
    tar czf "$tarball" -C "$d" rg
    rm -rf "$d"
  fi
  # code-server's postinstall refuses to run as root without unsafe-perm; node-pty's build
  # fetches node-gyp (npm_config_yes).
  npm_ci "$E2E" npm_config_unsafe_perm=true npm_config_yes=true
}

# The end-to-end tests, each in its own code-server: run.mjs (editing, the view, infer debugging,
# export, crash containment), then train.mjs (F5 joint train -> infer on the article's MNIST
# script), then deploy.mjs (Deploy to Ascend Device, the Device chart in the view), then
# msrun.mjs (Launch on Cluster: MindSpore's msrun with two CPU workers in the terminal). All run;
# the tier fails if any does.
e2e_tests() {
  local rc=0
  (cd "$EXT" && node test/e2e/run.mjs) || rc=1
  e2e_train || rc=1
  e2e_deploy || rc=1
  e2e_msrun || rc=1
  return "$rc"
}

# MindSpore's venv (scripts/msvenv.sh: made once, shared with the MindSpore tier), then msrun.mjs.
e2e_msrun() {
  local t0=$SECONDS
  local rc=0
  bash "$ROOT/scripts/msvenv.sh" || return 1
  (cd "$EXT" && node test/e2e/msrun.mjs) || rc=1
  say "msrun.mjs took $((SECONDS - t0)) s"
  return "$rc"
}

e2e_deploy() {
  local t0=$SECONDS
  local rc=0
  (cd "$EXT" && node test/e2e/deploy.mjs) || rc=1
  say "deploy.mjs took $((SECONDS - t0)) s"
  return "$rc"
}

e2e_train() {
  local t0=$SECONDS
  local rc=0
  (cd "$EXT" && node test/e2e/train.mjs) || rc=1
  say "train.mjs took $((SECONDS - t0)) s"
  return "$rc"
}

e2e() {
  e2e_setup
  package
  e2e_tests
}

cmd="${1:-}"
case "$cmd" in
  build) build ;;
  package) package ;;
  unit) unit ;;
  e2e-setup) e2e_setup ;;
  e2e) e2e ;;
  e2e-train)
    e2e_setup
    package
    e2e_train
    ;;
  e2e-msrun)
    e2e_setup
    package
    e2e_msrun
    ;;
  e2e-deploy)
    e2e_setup
    package
    e2e_deploy
    ;;
  test)
    unit
    e2e
    ;;
  *)
    echo "usage: scripts/extension.sh build|package|unit|e2e-setup|e2e|e2e-train|e2e-deploy|test" >&2
    exit 2
    ;;
esac
