#!/usr/bin/env bash
# Runs the benchmark (bench/) if it has been built; results are recorded in docs/benchmarks.md.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
for b in "$BUILD_DIR/bench/cellscope-bench" "$BUILD_DIR/cellscope-bench"; do
  if [[ -x "$b" ]]; then
    exec "$b" "$@"
  fi
done
echo "bench: no benchmark binary in $BUILD_DIR (bench/ has no cellscope-bench target yet)" >&2
exit 1
