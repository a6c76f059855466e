#!/usr/bin/env bash
# Runs the benchmark (bench/, target cellscope-bench): parse / evaluate / compile time and peak
# memory for every corpus model and for generated models of ~1k, ~10k and ~100k nodes, with the
# goals of issue 2 next to the figures. Results are recorded in docs/benchmarks.md.
#
#   BUILD_DIR=build bash scripts/bench.sh [cellscope-bench options]
#   e.g. scripts/bench.sh --runs 20 --format markdown, scripts/bench.sh --json, --no-generated
#   BUILD_DIR=build bash scripts/bench.sh --lsp [--edits N] [--rss-edits N] [--format json]
#
# Timings only mean something in an optimised build: when $BUILD_DIR is configured without
# optimisation (Debug, or no build type), an optimised tree $BUILD_DIR-bench (RelWithDebInfo,
# -O2 -g, the project's default) is configured and used instead.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

build_type() {
  sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$1/CMakeCache.txt" 2>/dev/null || true
}

dir=$BUILD_DIR
case "$(build_type "$dir")" in
  Release | RelWithDebInfo | MinSizeRel) ;;
  *)
    dir="$BUILD_DIR-bench"
    echo "bench: $BUILD_DIR is not an optimised build ($(build_type "$BUILD_DIR" || true)); using $dir (RelWithDebInfo)" >&2
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    ;;
esac

# `--lsp [options]`: the language-server benchmark (cellscope-lsp-bench) instead.
target=cellscope-bench
if [[ "${1:-}" == "--lsp" ]]; then
  shift
  target=cellscope-lsp-bench
fi

# Up to date after `make build`; builds the target when bench.sh is run on its own.
if [[ -f "$dir/build.ninja" ]]; then
  if ! log=$(ninja -C "$dir" -j "$JOBS" "$target" 2>&1); then
    printf '%s\n' "$log" >&2
    exit 1
  fi
fi

if [[ "$target" == cellscope-lsp-bench ]]; then
  [[ $# -eq 0 ]] && set -- --format markdown
  exec "$dir/bench/cellscope-lsp-bench" "$@"
fi

bin="$dir/bench/cellscope-bench"
if [[ ! -x "$bin" ]]; then
  echo "bench: no benchmark binary at $bin" >&2
  exit 1
fi
if [[ $# -eq 0 ]]; then
  set -- --check-linear
fi
exec "$bin" "$@"
