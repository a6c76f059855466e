#!/usr/bin/env bash
# Runs every test tier after the build: ctest (unit + CLI tests), short libFuzzer runs of every
# harness, the LSP tiers (protocol tests
# with real client libraries under Node, then neovim as a second client), the reliability tier
# (typing simulation and soak of the language server), the view tier (the
# graph view in chromium), the debug adapter, the CPU runtime against PyTorch, the VS Code
# extension (unit, then end to end in code-server), the MindSpore ground-truth tier, then the
# real-world tier. The LSP protocol tier runs inside the ASan tier, the DAP tier inside the TSan
# tier (their binaries instrumented); `make sanitize` runs every tier under both. All tiers run
# even if one fails; the exit status is non-zero if any failed.
# In CI (CI=true) a tier that cannot run is a failure, never a silent skip; the LSP tiers never
# skip (scripts/setup.sh installs what they need).
set -uo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-2}
CI=${CI:-false}

failed=()
passed=()
skipped=()

# Each tier's output also goes to $BUILD_DIR/tier-logs/NAME.log; the summary ends with the lines
# of a failed tier's log that say what failed (CI shows only the end of a run's output).
LOGS="$BUILD_DIR/tier-logs"
rm -rf "$LOGS" && mkdir -p "$LOGS"

tier() {  # tier NAME COMMAND...
  local name=$1
  shift
  printf '\n==> tier: %s\n' "$name"
  local start=$SECONDS rc=0
  "$@" 2>&1 | tee "$LOGS/$name.log"
  rc=${PIPESTATUS[0]}
  # Each tier's wall time is in the summary: the CI run has a time budget (README)
  local took="$((SECONDS - start)) s"
  if ((rc == 0)); then
    passed+=("$name ($took)")
  else
    failed+=("$name (exit $rc, $took)")
  fi
}

# Free disk at the start: a run takes a few GB of build trees and temporary files, and a full
# disk shows up as odd failures in whichever tier hits it first.
df -h . "${TMPDIR:-/tmp}" 2>/dev/null | sed 's/^/[disk] /'

tier ctest ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"

# libFuzzer (issue 14): every harness of tests/fuzz built with clang (ASan + UBSan, build tree
# build-asan/, which the asan tier below completes: scripts/asan-tree.sh) and run for
# FUZZ_SECONDS (10 here; `make fuzz` for long campaigns) from its seed corpus and regressions. A
# crash, timeout or out-of-memory found in this run fails the tier.
tier fuzz env FUZZ_SECONDS="${FUZZ_SECONDS:-10}" FUZZ_JOBS="$JOBS" bash scripts/fuzz.sh

# Sanitizers (issue 14; docs/reliability.md), two build trees: ASan + UBSan (clang, the fuzz
# tier's tree) under the unit, CLI and fuzz-replay tests, then `cellscope lsp` driven by
# vscode-jsonrpc / vscode-languageserver-protocol (tests/lsp/test) against the instrumented
# binary -- this is the LSP protocol tier. Then neovim's built-in client (tests/lsp/nvim) against the plain binary.
tier asan bash scripts/sanitizers.sh asan ctest lsp-protocol
tier lsp-nvim env CELLSCOPE_BIN="$BUILD_DIR/cellscope" bash tests/lsp/nvim/run.sh

# Reliability (issue 14): real model files (the corpus, mindcv and mindocr from their wheels)
# typed into `cellscope lsp` a keystroke at a time with deletions and undo -- no crash or hang,
# latency against the p99 goal, final diagnostics equal to a fresh open -- then a 10,000-edit
# soak of one server with its RSS flat after warm-up (tests/reliability; --full: 100,000).
tier reliability env CI="$CI" BUILD_DIR="$BUILD_DIR" CELLSCOPE_BIN="$BUILD_DIR/cellscope" \
  bash tests/reliability/run.sh

# The graph view: its type check and unit tests, then the real server and html snapshots in
# Debian's chromium (playwright-core); screenshots in $BUILD_DIR/test-artifacts/view.
tier view env CELLSCOPE_BIN="$BUILD_DIR/cellscope" CELLSCOPE_ARTIFACTS="$BUILD_DIR/test-artifacts/view" \
  bash webview/test/browser/run.sh

# TSan: the unit tests of the threaded parts (JSON-RPC dispatcher and transport, view server,
# parse cache, language server units), then `cellscope dap` driven by
# @vscode/debugadapter-testsupport's DebugClient (tests/dap) against the instrumented binary --
# this is the DAP tier.
tier tsan bash scripts/sanitizers.sh tsan ctest dap

# The CPU runtime against PyTorch (Debian's python3-torch under /usr/bin/python3): every node of
# the kernel-family models, LeNet-5, MobileNetV2 and ResNet-50 recomputed in torch from the
# runtime's own inputs and weights, and the whole networks end to end.
tier runtime-torch /usr/bin/python3 tests/runtime/check_torch.py --bin "$BUILD_DIR/bench/cellscope-run"

# ONNX export against PyPI onnx (checker, full_check) and onnxruntime: LeNet-5, ResNet-50,
# MobileNetV2, ViT-B/16, BERT-base, the MNIST network and an operator model, outputs equal to the
# runtime's; kill -9 during an export (docs/export.md). Needs
# PyPI onnx and onnxruntime: tests/runtime/run_onnx.sh installs them into ~/.cache/cellscope/torchvenv.
tier onnx env BUILD_DIR="$BUILD_DIR" bash tests/runtime/run_onnx.sh

# Netron (PyPI `netron`, installed into ~/.cache/cellscope/netronvenv when missing) opens the
# .mindir and .onnx of LeNet-5 and ResNet-50 in Debian's chromium and draws every node of the
# file (MindIR's Constant nodes as inputs); screenshots in $BUILD_DIR/test-artifacts/netron.
tier netron env BUILD_DIR="$BUILD_DIR" bash tests/runtime/run_netron.sh

# The VS Code extension: its unit tests, then the .vsix (bundling this build's binary) installed
# into a real VS Code (code-server 4.100.3) driven by playwright-core in chromium; screenshots in
# extension/test/e2e/artifacts.
tier extension env CELLSCOPE_BIN="$BUILD_DIR/cellscope" bash scripts/extension.sh test

# Deploy (docs/deploy.md): `cellscope agent` in a network namespace the test makes (veth pair,
# 10.213.x.0/30 addresses that exist only here) and `cellscope deploy` against it, with the faults
# of issue 20 (kill -9 mid-transfer, corrupted chunk, wrong token / fingerprint, path traversal,
# a model that does not load, a full tmpfs, a dropped link). Needs root (ip netns, mount).
tier deploy /usr/bin/python3 tests/deploy/test_deploy.py --bin "$BUILD_DIR/cellscope"

if [[ -f tests/mindspore/run.sh ]]; then
  tier mindspore env CI="$CI" BUILD_DIR="$BUILD_DIR" CELLSCOPE_REQUIRE_BIN=1 bash tests/mindspore/run.sh
elif [[ "$CI" == true ]]; then
  printf '\n==> tier: mindspore\ntests/mindspore/run.sh is missing\n'
  failed+=("mindspore (tests/mindspore/run.sh missing)")
else
  printf '\n==> tier: mindspore: SKIPPED (tests/mindspore/run.sh not found)\n'
  skipped+=("mindspore (tests/mindspore/run.sh not found)")
fi

# The open real-world tier: MindSpore's model libraries from PyPI (their wheels carry the
# sources), every model file checked against a reviewed error list, every mindcv factory against
# MindSpore's parameter counts and shapes (tests/realworld).
tier realworld env CI="$CI" BUILD_DIR="$BUILD_DIR" CELLSCOPE_BIN="$BUILD_DIR/cellscope" \
  bash tests/realworld/run.sh

# What failed, in few lines: a tier's own failure lines (tests/lib.sh's "FAIL", ctest's
# "Failed", node:test's "not ok", a sanitizer's "ERROR: ...Sanitizer" / "SUMMARY:", the fuzz
# tier's "[fuzz] found"), at most 8 per failed tier, each cut to 220 characters.
failure_lines() {
  [[ -f $1 ]] || return 0
  grep -a -E '(^|[^a-z])(FAIL|FAILED|Failed|not ok|ERROR|Error:|SUMMARY:|Assertion|\[fuzz\] found|Timeout|timed out)' "$1" |
    grep -a -v -E '^\s*(# )?(fail|failed) 0|, 0 failed|0 failed' | tail -8 | cut -c1-220 || true
}

printf '\n==> summary\n'
printf '  passed:  %s\n' "$(IFS=,; echo "${passed[*]+"${passed[*]}"}" | sed 's/,/, /g')"
for t in "${skipped[@]+"${skipped[@]}"}"; do printf '  SKIPPED: %s\n' "$t"; done
for t in "${failed[@]+"${failed[@]}"}"; do
  printf '  FAILED:  %s\n' "$t"
  failure_lines "$LOGS/${t%% (*}.log" | sed 's/^/    | /'
done
printf '  tiers took %d s in all\n' "$SECONDS"
# Before the tiers (the Makefile's stamps): set-up, configure + build, and whether ccache had them.
t() { cat "$BUILD_DIR/.t-$1" 2>/dev/null; }
if [[ -n "$(t setup)" && -n "$(t configure)" && -n "$(t built)" ]]; then
  printf '  before them: set-up %d s, configure + build %d s%s\n' "$(($(t configure) - $(t setup)))" \
    "$(($(t built) - $(t configure)))" \
    "$(ccache -s 2>/dev/null | awk '/^ *(Hits|Misses):/ {printf "%s %s %s", (n++ ? "," : "; ccache, all trees:"), tolower($1), $2}')"
fi
((${#failed[@]} == 0))
