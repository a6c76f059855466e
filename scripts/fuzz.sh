#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer harnesses of tests/fuzz (clang 14, ASan + UBSan, in the ASan
# build tree build-asan/ that the asan tier uses too; scripts/asan-tree.sh) and runs each for
# FUZZ_SECONDS, FUZZ_JOBS harnesses at a time. What each found goes to
# build-asan/artifacts/<harness>/ (crash-*, timeout-*, oom-*, slow-unit-*), the table of executions
# to build-asan/fuzz-report.md; the working corpora (build-asan/corpus/<harness>) persist between
# runs. A crash becomes a regression input: minimise it (`<harness> -minimize_crash=1
# -runs=10000 FILE`), fix it, copy it to tests/fuzz/regressions/<harness>/ (ctest replays it).
#
#   FUZZ_SECONDS=600 FUZZ_JOBS=2 FUZZ_TARGETS="lsp python" make fuzz
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${FUZZ_BUILD_DIR:-${ASAN_BUILD_DIR:-build-asan}}
SECONDS_EACH=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
TARGETS=${FUZZ_TARGETS:-lsp dap python config project_config target checkpoint view mindir}

log() { printf '[fuzz] %s\n' "$*" >&2; }

# The ASan tree shared with the asan tier (scripts/asan-tree.sh: clang-14, ASan + UBSan).
. scripts/asan-tree.sh
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache} CCACHE_BASEDIR=$ROOT
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}  # see Makefile
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
asan_tree_configure "$OUT" || exit 1
ninja -C "$OUT" $(for t in $TARGETS; do printf '%s_fuzz ' "$t"; done) || exit 1

# Per harness: the longest input, the dictionary, seed directories besides its own corpus and
# regressions (real model files when the real-world tier has unpacked them).
max_len() { case $1 in python | lsp) echo 65536 ;; view | dap | mindir) echo 16384 ;; *) echo 8192 ;; esac; }
dict() {
  case $1 in
    python | config) echo tests/fuzz/dicts/python.dict ;;
    view) echo tests/fuzz/dicts/http.dict ;;
    mindir) echo tests/fuzz/dicts/mindir.dict ;;
    *) echo tests/fuzz/dicts/json.dict ;;
  esac
}
seeds() {
  case $1 in
    python)
      echo tests/corpus/models tests/fixtures
      for lib in mindcv mindocr; do
        [[ -d build/realworld/src/$lib ]] && echo "build/realworld/src/$lib"
      done
      ;;
    target) echo graphcore/targets ;;
    checkpoint) echo tests/fixtures/checkpoints ;;
    mindir) echo "$OUT/fuzz/seeds/mindir" ;;  # written by the build (tests/fuzz/mindir_seeds.cpp)
  esac
}

# Leaks are not looked for per input (the servers' worker threads own long-lived state that
# LeakSanitizer would report at every exit); allocations beyond 4 GiB return null, so that a size
# the program failed to bound shows up as an "out of memory" error of the program or as a crash
# in the report, not as the fuzzer's own abort.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1:max_allocation_size_mb=4096}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local t=$1 bin="$OUT/fuzz/$1_fuzz" work="$OUT/corpus/$1" art="$OUT/artifacts/$1/"
  mkdir -p "$work" "$art"
  local dirs=("$work" "tests/fuzz/corpus/$t")
  [[ -d tests/fuzz/regressions/$t ]] && dirs+=("tests/fuzz/regressions/$t")
  for s in $(seeds "$t"); do dirs+=("$s"); done
  log "$t: ${SECONDS_EACH}s"
  "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 -report_slow_units=1 -rss_limit_mb=6144 \
    -max_len="$(max_len "$t")" -dict="$(dict "$t")" -artifact_prefix="$art" -print_final_stats=1 \
    "${dirs[@]}" >"$OUT/fuzz-$t.log" 2>&1
  echo $? >"$OUT/fuzz-$t.rc"
}

# Findings of this run are the artefacts newer than this stamp (those of earlier runs stay for
# whoever reads them, and do not fail this one).
mkdir -p "$OUT"
stamp="$OUT/.run-start"
touch "$stamp"

new_findings() {
  find "$OUT/artifacts/$1" -type f -newer "$stamp" \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' \
    -o -name 'leak-*' \)
}

running=0
for t in $TARGETS; do
  run_one "$t" &
  running=$((running + 1))
  if ((running >= JOBS)); then
    wait -n
    running=$((running - 1))
  fi
done
wait

# The report: executions, corpus size, slow units, findings of this run per harness. The exit
# status is non-zero when a harness failed or found something.
report() {
  printf '| harness | seconds | executions | exec/s | corpus | slowest unit | crashes/timeouts/ooms |\n'
  printf '|---|---|---|---|---|---|---|\n'
  for t in $TARGETS; do
    f="$OUT/fuzz-$t.log"
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$f" | awk '{print $2}' | tail -1)
    slowest=$(grep -o 'Slowest unit: [0-9]* s' "$f" | awk '{print $3}' | sort -n | tail -1)
    corpus=$(find "$OUT/corpus/$t" -type f | wc -l)
    findings=$(new_findings "$t" | wc -l)
    rc=$(cat "$OUT/fuzz-$t.rc")
    printf '| %s | %s | %s | %s | %s | %s | %s%s |\n' "$t" "$SECONDS_EACH" "${execs:-0}" \
      "$(( ${execs:-0} / SECONDS_EACH ))" "$corpus" "${slowest:+${slowest} s}" "$findings" \
      "$( ((rc != 0)) && printf ' (exit %s, see %s)' "$rc" "$f")"
  done
}
report | tee "$OUT/fuzz-report.md"
# What a failed harness found, in a few lines: the sanitizer's or libFuzzer's error, the first
# frames in Cellscope's code, the summary and the input it wrote.
for t in $TARGETS; do
  f="$OUT/fuzz-$t.log"
  [[ "$(cat "$OUT/fuzz-$t.rc")" == 0 && -z "$(new_findings "$t")" ]] && continue
  {
    grep -a -m1 -E '==[0-9]+==ERROR|runtime error:|ERROR: libFuzzer|out-of-memory|timeout after' "$f"
    grep -a -E '^ +#[0-9]+ 0x[0-9a-f]+ in .*(graphcore|server|adapter|protocol|tests/fuzz)/' "$f" | head -4
    grep -a -m1 -E '^SUMMARY:' "$f"
    new_findings "$t"
  } | cut -c1-220 | sed "s|^|[fuzz] found by $t: |"
done
for t in $TARGETS; do
  [[ "$(cat "$OUT/fuzz-$t.rc")" == 0 ]] || exit 1
  [[ -z "$(new_findings "$t")" ]] || exit 1
done
exit 0
