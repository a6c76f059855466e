#!/usr/bin/env bash
# The open real-world tier (issue: precision on real code). Four parts:
#   1. `cellscope check` on every model file of the libraries in libraries.txt, against the
#      reviewed list expected-errors.txt (check_corpus.py);
#   2. every registered mindcv factory built with `--entry`, against MindSpore 2.10's parameter
#      counts and output shapes (check_factories.py on mindcv-ground-truth.json, which
#      ground_truth.py wrote by running MindSpore);
#   2b. mindyolo's YOLOv8 built from a YAML config written here (mindyolo/yolov8n.yaml, named
#      with --config), against MindSpore 2.10's figures in mindyolo-ground-truth.json;
#   3. that recorded ground truth re-measured with MindSpore for a few factories in this run
#      (the MindSpore venv of tests/mindspore/run.sh, plus requirements.txt here);
#   4. mindcv models exported to MindIR by Cellscope, loaded by MindSpore and compared with the
#      runtime's output; the runtime with MindSpore's own checkpoint of the model against
#      MindSpore's forward pass (export_check.py, in that venv).
# Environment: CELLSCOPE_BIN (default build/cellscope), BUILD_DIR (default build),
# CELLSCOPE_MS_VENV (default ~/.cache/cellscope/msvenv), CI.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../lib.sh"
tier_init realworld
ROOT=$REPO
BIN=$CELLSCOPE_BIN
VENV="${CELLSCOPE_MS_VENV:-$HOME/.cache/cellscope/msvenv}"
cd "$ROOT" || exit 1
WORK="$BUILD_DIR/realworld"
need_bin

# The wheels, once (pip's cache and the stamps make later runs offline).
mapfile -t LIBS < <(grep -v '^\s*#' "$HERE/libraries.txt" | grep -v '^\s*$')
fetch_wheels "${LIBS[@]}"

status=0
echo "realworld: part 1, cellscope check on every model file"
python3 "$HERE/check_corpus.py" --bin "$BIN" --src "$WORK/src" --json-out "$WORK/check.json" || status=1

echo "realworld: part 2, mindcv factories against MindSpore's figures"
python3 "$HERE/check_factories.py" --bin "$BIN" --src "$WORK/src" \
  --truth "$HERE/mindcv-ground-truth.json" || status=1

echo "realworld: part 2b, mindyolo's YOLOv8 built from a YAML config (mindspore_config.json configs / --config)"
python3 - "$BIN" "$HERE" "$WORK/src/mindyolo" <<'PY' || status=1
import json, subprocess, sys
bin_, here, root = sys.argv[1:]
bad = 0
for m in json.load(open(f"{here}/mindyolo-ground-truth.json"))["models"]:
    p = subprocess.run([bin_, "graph", f"{here}/{m['driver']}", "--root", root, "--config",
                        f"{here}/{m['config']}", "--input", ",".join(map(str, m["input"])),
                        "--cell", m["name"], "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    doc = json.loads(p.stdout) if p.stdout.strip() else {"cells": [], "diagnostics": []}
    c = doc["cells"][0] if doc["cells"] else {}
    got = (c.get("params"), c.get("totalParams"), (c.get("outputs") or [{}])[0].get("shape"))
    want = (m["trainable_params"], m["total_params"], m["output"])
    errors = [d["message"] for d in doc["diagnostics"] if d["severity"] == "error"]
    ok = got == want and not errors
    print(f"  {'ok' if ok else 'BAD'}: {m['name']} from {m['config']}: {got} vs MindSpore {want}"
          + (f"; errors: {errors}" if errors else ""))
    bad += not ok
print(f"{0 if bad else 1} passed, {bad} failed")
sys.exit(1 if bad else 0)
PY

echo "realworld: part 3, the recorded ground truth re-measured with MindSpore"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV" || { echo "realworld: cannot create $VENV"; exit 1; }
fi
"$VENV/bin/python" -m pip install -q -r "$HERE/requirements.txt" || { echo "realworld: pip install failed"; exit 1; }
# Three factories, a different three each day (the whole table takes ~20 minutes to measure).
mapfile -t SAMPLE < <(python3 - "$HERE/mindcv-ground-truth.json" <<'PY'
import datetime, json, random, sys
models = [m["name"] for m in json.load(open(sys.argv[1]))["models"] if m.get("forward")]
print("\n".join(random.Random(datetime.date.today().toordinal()).sample(models, 3)))
PY
)
only=()
for m in "${SAMPLE[@]}"; do only+=(--only "$m"); done
"$VENV/bin/python" "$HERE/ground_truth.py" --out "$WORK/sample-truth.json" "${only[@]}" || status=1
python3 - "$HERE/mindcv-ground-truth.json" "$WORK/sample-truth.json" <<'PY' || status=1
import json, sys
recorded = {m["name"]: m for m in json.load(open(sys.argv[1]))["models"]}
fresh = json.load(open(sys.argv[2]))["models"]
bad = 0
for m in fresh:
    r = recorded[m["name"]]
    same = all(m.get(k) == r.get(k) for k in ("trainable_params", "total_params", "output"))
    print(f"  {'same' if same else 'DIFFERENT'}: {m['name']} {m.get('trainable_params')} params, output {m.get('output')}")
    bad += not same
print(f"{len(fresh) - bad} passed, {bad} failed")
sys.exit(1 if bad or not fresh else 0)
PY

echo "realworld: part 4, mindcv models exported by Cellscope, loaded by MindSpore"
"$VENV/bin/python" "$HERE/export_check.py" --bin "$BIN" --run "$BUILD_DIR/bench/cellscope-run" || status=1
exit $status
