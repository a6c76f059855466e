#!/usr/bin/env bash
# The sanitizer tiers of `make test` (docs/reliability.md):
#   asan  build-asan/ (clang 14, ASan + UBSan, the tree the fuzz tier's libFuzzer harnesses are
#         built in: scripts/asan-tree.sh): ctest (unit, CLI, the fuzz harnesses replaying their
#         seeds and regression inputs), then the LSP protocol, DAP and view tiers against its
#         binary.
#   tsan  build-tsan/ (-DCELLSCOPE_SANITIZE=thread): the unit tests of the threaded parts (the
#         LSP's analysis worker, the JSON-RPC layer, the view server), then the LSP protocol, DAP
#         and view tiers against its binary (the LSP worker, the DAP worker and the view server
#         run there under real clients).
# Every report is fatal (halt_on_error) and also written under <build>/sanitizer-logs/: a report
# from a child process that a test tolerated (a server it restarts) still fails the tier.
#
#   sanitizers.sh asan|tsan [STEP...]   STEP: ctest lsp-protocol dap view (default: all four).
#   `make test` runs `asan ctest lsp-protocol` and `tsan ctest dap`: those sanitizer runs replace
#   the plain LSP protocol and DAP tiers; `make sanitize` runs every step of both.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=${1:?usage: sanitizers.sh asan|tsan [ctest lsp-protocol dap view]}
shift
STEPS=("$@")
((${#STEPS[@]})) || STEPS=(ctest lsp-protocol dap view)
wants() {
  local s
  for s in "${STEPS[@]}"; do [[ $s == "$1" ]] && return 0; done
  return 1
}
JOBS=${JOBS:-2}
case $MODE in
  asan) DIR=${ASAN_BUILD_DIR:-build-asan} ;;
  tsan) DIR=${TSAN_BUILD_DIR:-build-tsan} ;;
  *) echo "sanitizers.sh: unknown mode $MODE" >&2; exit 2 ;;
esac

export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache} CCACHE_BASEDIR=$ROOT
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}  # see Makefile
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
if [[ $MODE == asan ]]; then
  # The clang tree the fuzz tier builds its libFuzzer harnesses in (scripts/asan-tree.sh): here
  # the binary, the unit tests and the harnesses' replay binaries of the same objects.
  . scripts/asan-tree.sh
  asan_tree_configure "$DIR" || exit 1
  targets=(cellscope cellscope_unit_tests cellscope_thread_tests cellscope_parallel_tests fuzz_replay)
else
  args=(-S . -B "$DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCELLSCOPE_SANITIZE=thread)
  cmake "${args[@]}" >/dev/null || cmake "${args[@]}" || exit 1
  # Only the binary and the suites of the threaded parts (tests/CMakeLists.txt).
  targets=(cellscope cellscope_thread_tests)
fi
ninja -C "$DIR" -j "$JOBS" "${targets[@]}" || exit 1

LOGS="$ROOT/$DIR/sanitizer-logs"
rm -rf "$LOGS" && mkdir -p "$LOGS"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:log_path=$LOGS/asan:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$LOGS/ubsan"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$LOGS/tsan"
export CELLSCOPE_BIN="$ROOT/$DIR/cellscope" CELLSCOPE_SANITIZED=1

failed=()
step() {  # step NAME COMMAND...
  local name=$1
  shift
  printf '\n--> %s: %s\n' "$MODE" "$name"
  "$@" || failed+=("$name")
}

if wants ctest; then
  if [[ $MODE == asan ]]; then
    step ctest ctest --test-dir "$DIR" --output-on-failure -j "$JOBS" -L 'unit|cli|fuzz'
  else
    # The suites with threads or shared state: the JSON-RPC layer (dispatcher, cancellation, the
    # stdio transport), the view server, the parse cache shared by analyses, the analysis
    # cancellation flag, the language server's units.
    step ctest ctest --test-dir "$DIR" --output-on-failure -j "$JOBS" -L unit \
      -R 'JsonRpc|Framing|RpcStdio|Cancellation|View|ParseCache|Lsp|Workspace'
  fi
fi
wants lsp-protocol && step lsp-protocol bash tests/lsp/run.sh
wants dap && step dap bash tests/dap/run.sh
wants view && step view env CELLSCOPE_ARTIFACTS="$ROOT/$DIR/test-artifacts/view" bash webview/test/browser/run.sh

reports=$(find "$LOGS" -type f | sort)
if [[ -n $reports ]]; then
  printf '\n%s: sanitizer reports:\n' "$MODE"
  for r in $reports; do
    printf '==> %s\n' "$r"
    head -60 "$r"
  done
  failed+=("reports in $LOGS")
fi
if ((${#failed[@]})); then
  printf '\n%s: FAILED: %s\n' "$MODE" "${failed[*]}"
  exit 1
fi
printf '\n%s: clean\n' "$MODE"
