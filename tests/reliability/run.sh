#!/usr/bin/env bash
# The reliability tier (issue 14): the typing simulation (typing.mjs) and the soak (soak.mjs)
# against the real `cellscope lsp`, through vscode-jsonrpc / vscode-languageserver-protocol.
#   run.sh           CI size: every corpus model + 5 mindcv and 5 mindocr model files, 100
#                    keystrokes each; a 10,000-edit soak (about 3 minutes on 2 cores)
#   run.sh --full    every corpus model and every mindcv and mindocr model file, 200 keystrokes
#                    each; the 100,000-edit soak (RSS every 1,000 edits)
# Environment:
#   CELLSCOPE_BIN     the server binary (default: $BUILD_DIR/cellscope)
#   BUILD_DIR         default build; the real model files are the wheels tests/realworld/run.sh
#                     unpacks into $BUILD_DIR/realworld/src (fetched here too when missing);
#                     results and reproductions go to $BUILD_DIR/reliability
#   RELIABILITY_SEED  the seed (default 14, so that CI replays the same edits; "random" for a
#                     new one, printed)
# A missing dependency (node, the npm packages, the binary, the wheels) is a failure, never a
# skip.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"
tier_init reliability
repo=$REPO
cd "$repo" || exit 1
BIN=$CELLSCOPE_BIN
SEED=${RELIABILITY_SEED:-14}
[[ "$SEED" == random ]] && SEED=$((RANDOM * 32768 + RANDOM))
full=false
[[ "${1:-}" == --full ]] && full=true

need_node
need_npm "$here" install
need_bin
# mindcv and mindocr as tests/realworld/run.sh fetches them (same folders and stamps, so the two
# tiers share one download).
mapfile -t specs < <(library_specs 'mindcv|mindocr')
fetch_wheels "${specs[@]}"
work="$BUILD_DIR/realworld"

out="$BUILD_DIR/reliability"
rm -rf "$out" && mkdir -p "$out"
status=0
if $full; then
  typing=(--set full --edits 200)
  soak=(--edits 100000 --sample-every 1000)
else
  typing=(--set ci)
  soak=(--edits 10000 --sample-every 500)
fi
node "$here/typing.mjs" "${typing[@]}" --seed "$SEED" --bin "$BIN" --src "$work/src" --out "$out/repro" \
  --json-out "$out/typing.json" || status=1
node "$here/soak.mjs" "${soak[@]}" --seed "$SEED" --bin "$BIN" --out "$out/repro" \
  --json-out "$out/soak.json" || status=1
echo "reliability: results in $out/typing.json and $out/soak.json$( ((status)) && echo "; reproductions in $out/repro")"
exit $status
