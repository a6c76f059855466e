#!/usr/bin/env bash
# A soak under heaptrack (docs/reliability.md, finding 1): the long-lived `cellscope lsp` of
# soak.mjs runs with heaptrack's preload library and newshim.cpp (operator new -> malloc, so
# that allocations through mimalloc's operator new are seen); the fresh servers it compares with
# run plain. The raw data is large (~0.5 GB per 1,000 edits).
#   run.sh OUTDIR [soak.mjs options...]     e.g. run.sh /tmp/ht --edits 5000 --seed 1414
# then: /usr/lib/heaptrack/libexec/heaptrack_interpret < OUTDIR/cs.raw > OUTDIR/cs.data
#       heaptrack_print -f OUTDIR/cs.data -l 1 -M OUTDIR/cs.massif
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
bin=${CELLSCOPE_BIN:-$here/../../../build/cellscope}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
preload=/usr/lib/heaptrack/libheaptrack_preload.so
[[ -f $preload ]] || { echo "heaptrack is not installed ($preload)" >&2; exit 1; }
g++ -O2 -shared -fPIC -o "$out/newshim.so" "$here/newshim.cpp"
rm -rf "$out/lock"
cat >"$out/wrap.sh" <<WRAP
#!/bin/sh
if mkdir "$out/lock" 2>/dev/null; then
  LD_PRELOAD=$preload:$out/newshim.so DUMP_HEAPTRACK_OUTPUT=$out/cs.raw exec "$bin" "\$@"
fi
exec "$bin" "\$@"
WRAP
chmod +x "$out/wrap.sh"
exec node "$here/../soak.mjs" --bin "$out/wrap.sh" --out "$out/repro" --json-out "$out/soak.json" "$@"
