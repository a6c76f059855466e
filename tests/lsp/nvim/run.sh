#!/usr/bin/env bash
# The neovim client tier: runs tests/lsp/nvim/test.lua in a headless, clean neovim (no user
# config, no plugins) against build/cellscope. Exit status 0 when the script reported "ok".
#   CELLSCOPE_BIN   the server binary (default: build/cellscope, relative to the repository root)
# A missing nvim is a failure (scripts/setup.sh installs it), never a skip.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
bin=${CELLSCOPE_BIN:-build/cellscope}
[[ "$bin" = /* ]] || bin="$repo/$bin"

if ! command -v nvim >/dev/null 2>&1; then
  echo "nvim-client: nvim is not installed (scripts/setup.sh installs it: apt-get install neovim)" >&2
  exit 1
fi
if [[ ! -x "$bin" ]]; then
  echo "nvim-client: $bin is not built" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cellscope-nvim.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ws" "$tmp/cache" "$tmp/data" "$tmp/state" "$tmp/config"
cp "$repo/tests/corpus/buggy/mnist_article_bug.py" "$tmp/ws/"

start=$(date +%s%N)
status=0
# Neovim writes its own files (shada, logs, swap) under these: keep them out of $HOME.
env XDG_CACHE_HOME="$tmp/cache" XDG_DATA_HOME="$tmp/data" XDG_STATE_HOME="$tmp/state" \
  XDG_CONFIG_HOME="$tmp/config" \
  CELLSCOPE_BIN="$bin" CELLSCOPE_ROOT="$tmp/ws" CELLSCOPE_FILE="$tmp/ws/mnist_article_bug.py" \
  RESULT_FILE="$tmp/result" \
  timeout 60 nvim --headless --clean -u NONE -n -c 'filetype on' -c "luafile $here/test.lua" \
  </dev/null >"$tmp/nvim.out" 2>&1 || status=$?
ms=$((($(date +%s%N) - start) / 1000000))

if [[ -f "$tmp/result" ]]; then
  cat "$tmp/result"
else
  echo "FAILED: no result file (nvim exit $status)"
fi
if [[ $status -ne 0 ]] || [[ "$(head -n1 "$tmp/result" 2>/dev/null)" != ok ]]; then
  echo "--- nvim output ---"
  cat "$tmp/nvim.out"
  echo
  echo "nvim-client: FAILED (nvim exit $status, ${ms} ms)"
  exit 1
fi
echo "nvim-client: passed ($(nvim --version | head -n1), ${ms} ms)"
