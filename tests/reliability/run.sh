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
repo=$(cd "$here/../.." && pwd)
cd "$repo" || exit 1
BUILD_DIR=${BUILD_DIR:-build}
BIN=${CELLSCOPE_BIN:-$BUILD_DIR/cellscope}
[[ "$BIN" = /* ]] || BIN="$repo/$BIN"
SEED=${RELIABILITY_SEED:-14}
[[ "$SEED" == random ]] && SEED=$((RANDOM * 32768 + RANDOM))
full=false
[[ "${1:-}" == --full ]] && full=true

if ! command -v node >/dev/null 2>&1; then
  echo "reliability: node is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
if ! bash "$here/deps.sh" install; then
  echo "reliability: cannot install the npm dependencies (bash tests/reliability/deps.sh install)" >&2
  exit 1
fi
if [[ ! -x "$BIN" ]]; then
  echo "reliability: $BIN is not built" >&2
  exit 1
fi

# mindcv and mindocr as tests/realworld/run.sh fetches them (same folders and stamps, so the two
# tiers share one download): their wheels carry the sources; nothing is copied into the repository.
work="$BUILD_DIR/realworld"
mkdir -p "$work/wheels" "$work/src"
for spec in $(grep -E '^(mindcv|mindocr)==' "$repo/tests/realworld/libraries.txt"); do
  name="${spec%%==*}"
  version="${spec##*==}"
  if [[ ! -f "$work/src/$name/.unpacked-$version" ]]; then
    echo "reliability: fetching $spec"
    python3 -m pip download -q --no-deps -d "$work/wheels" "$spec" || { echo "reliability: pip download $spec failed" >&2; exit 1; }
    wheel=$(ls "$work/wheels/${name}-${version}"-*.whl 2>/dev/null | head -1)
    [[ -n "$wheel" ]] || { echo "reliability: no wheel for $spec" >&2; exit 1; }
    rm -rf "$work/src/$name" && mkdir -p "$work/src/$name"
    python3 -m zipfile -e "$wheel" "$work/src/$name" || exit 1
    touch "$work/src/$name/.unpacked-$version"
  fi
done

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
