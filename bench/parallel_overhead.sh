#!/usr/bin/env bash
# What the parallel-strategy checks (docs/parallel.md §9, §13) add to an analysis: BERT-base
# (tests/corpus/models/bert_base.py) as it is, and the same source with an 8-device strategy
# (semi_auto_parallel, device_num=8; both attention BatchMatMuls of all 12 layers split
# (1, 4, 2, 1) x (1, 4, 1, 1): 4 head groups x 2 sequence blocks). Each is analysed
# --runs times in a fresh cellscope-bench child; the medians are printed as a markdown table
# (docs/benchmarks.md, "Parallel-strategy checks").
# Usage: bench/parallel_overhead.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-20}
bench="$build/bench/cellscope-bench"
[[ -x "$bench" ]] || { echo "build $bench first (ninja -C $build cellscope-bench)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
plain=tests/corpus/models/bert_base.py
sharded="$dir/bert_base_8dev.py"
propagated="$dir/bert_base_8dev_propagation.py"
python3 - "$plain" "$sharded" "$propagated" <<'PY'
import sys
src = open(sys.argv[1]).read()
strategy = ".shard(((1, 4, 2, 1), (1, 4, 1, 1)))"
for old in ("ops.BatchMatMul(transpose_b=True)", "ops.BatchMatMul()"):
    assert src.count(old) == 1, old
    src = src.replace(old, old + strategy)
anchor = "\n@dataclass\nclass BertConfig"
assert src.count(anchor) == 1
src = src.replace(anchor, '\nms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", '
                  'device_num=8)\n' + anchor, 1)
open(sys.argv[2], "w").write(src)
# The same strategies under auto_parallel with sharding propagation (docs/parallel.md §13): every
# operator their layouts reach takes a propagated strategy.
open(sys.argv[3], "w").write(src.replace('parallel_mode="semi_auto_parallel"',
                                         'parallel_mode="auto_parallel", '
                                         'search_mode="sharding_propagation"', 1))
PY
row() {
  local name=$1 file=$2
  local out
  out=$("$bench" --one "$file" --entry "bert_base()" --runs "$runs")
  python3 -c 'import json,sys; d=json.loads(sys.argv[2]); print("| %s | %.2f | %.2f | %.2f | %.2f |" % (sys.argv[1], d["evaluate_ms"], d["compile_ms"], d["total_ms"], d["cpu_ms"]))' "$name" "$out"
}
echo "| BERT-base s128 | evaluate ms | compile + checks ms | total ms | CPU ms |"
echo "|---|---:|---:|---:|---:|"
row "no strategy" "$plain"
row "8 devices (24 sharded BatchMatMuls)" "$sharded"
row "8 devices, sharding propagation" "$propagated"
# A diagnostic-free sharded model: the strategy is valid.
for f in "$sharded" "$propagated"; do
  if "$build/cellscope" check "$f" | grep -q "parallel-"; then
    echo "the 8-device strategy should be valid ($f)" >&2
    exit 1
  fi
done
