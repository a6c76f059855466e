#!/usr/bin/env bash
# Reproduces docs/view.md's comparison: the same ResNet-50 and BERT-base (tests/corpus/models/)
# in Netron, Model Explorer and Cellscope, screenshotted in Debian's chromium at 1400x900.
# Not part of `make test`.
#
#   scripts/viewer-compare.sh [OUT]     (OUT default docs/images/view)
#
# 1. A virtualenv with the viewers from PyPI (netron, ai-edge-model-explorer, model-explorer-onnx,
#    onnx), $VIEWERS_VENV (default ~/.cache/cellscope/viewersvenv); kept when it has them.
# 2. MindSpore exports the very Cells Cellscope reads (scripts/viewer-compare-export.py) to MindIR
#    and ONNX in $MODELS (default /tmp/cellscope-viewer-compare, never the repository), with the
#    Python of $MS_PYTHON (default ~/.cache/cellscope/msvenv/bin/python; when it has no
#    MindSpore, that venv is made and mindspore==2.10.0 installed from PyPI).
# 3. onnx's shape inference writes *.shapes.onnx (MindSpore's ONNX carries no intermediate
#    shapes; Model Explorer's adapter infers them itself, Netron does not), and targets.json
#    names the node each tool selects.
# 4. scripts/viewer-compare.mjs serves each file (netron, model-explorer, `cellscope view`),
#    takes the screenshots and prints one JSON line per screenshot (ms: navigation -> graph drawn).
# 5. The PNGs are optimised with pngquant/optipng when they are installed.
#
# Needs: /usr/bin/chromium, Node 20 with webview/node_modules (scripts/setup.sh), build/cellscope
# (CELLSCOPE_BIN overrides), python3 (3.11 for MindSpore 2.10). Netron draws tensor shapes with
# U+3008/U+3009 angle brackets: without a font that has them (Debian's fonts-wqy-microhei, which
# this script installs when run as root) they show as boxes.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(realpath -m "${1:-$ROOT/docs/images/view}")"
VENV="${VIEWERS_VENV:-$HOME/.cache/cellscope/viewersvenv}"
MS_PYTHON="${MS_PYTHON:-$HOME/.cache/cellscope/msvenv/bin/python}"
MODELS="${MODELS:-/tmp/cellscope-viewer-compare}"
BIN="${CELLSCOPE_BIN:-$ROOT/build/cellscope}"
say() { printf '== viewer-compare: %s\n' "$*"; }

[[ -x /usr/bin/chromium ]] || { echo "needs Debian's chromium (/usr/bin/chromium)" >&2; exit 1; }
[[ -d "$ROOT/webview/node_modules/playwright-core" ]] || { echo "needs webview/node_modules (scripts/setup.sh)" >&2; exit 1; }
[[ -x "$BIN" ]] || { echo "needs $BIN (make build) or CELLSCOPE_BIN" >&2; exit 1; }
if ! fc-list ':charset=3008' | grep -q .; then
  if [[ $EUID -eq 0 ]]; then
    say "installing fonts-wqy-microhei (Netron's shape brackets)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q fonts-wqy-microhei >/dev/null
  else
    say "warning: no font with U+3008; Netron's shape brackets will show as boxes (apt-get install fonts-wqy-microhei)"
  fi
fi

if ! { [[ -x "$VENV/bin/netron" && -x "$VENV/bin/model-explorer" ]] \
       && "$VENV/bin/python" -c 'import onnx, model_explorer_onnx' 2>/dev/null; }; then
  say "virtualenv $VENV (PyPI: netron, ai-edge-model-explorer, model-explorer-onnx, onnx)"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q netron==9.3.3 ai-edge-model-explorer==0.1.34 model-explorer-onnx==0.4.2 onnx==1.23.2
fi

if ! "$MS_PYTHON" -c 'import mindspore' 2>/dev/null; then
  MS_VENV="$(dirname "$(dirname "$MS_PYTHON")")"
  say "virtualenv $MS_VENV (PyPI: mindspore==2.10.0)"
  python3 -m venv "$MS_VENV"
  "$MS_VENV/bin/pip" install -q --upgrade pip
  "$MS_VENV/bin/pip" install -q mindspore==2.10.0
  MS_PYTHON="$MS_VENV/bin/python"
fi

mkdir -p "$MODELS"
say "exporting with MindSpore into $MODELS"
# MindSpore logs its warnings on stderr; the export's own lines go to stdout.
(cd "$MODELS" && nice "$MS_PYTHON" "$ROOT/scripts/viewer-compare-export.py" "$ROOT" "$MODELS" 2>"$MODELS/export.log") || true

say "shape inference and targets.json"
nice "$VENV/bin/python" - "$MODELS" <<'EOF'
import json, os, sys
import onnx
from onnx import shape_inference

d = sys.argv[1]
# The node each tool selects: the one that reads this weight (layer1.0's 3x3 conv; BERT's first query).
spec = {"resnet50": ("resnet50", "layer1.0.conv2.weight"),
        "bert_base": ("bert_base", "encoder.layers.0.attention.query.weight")}
targets = {}
for key, (stem, weight) in spec.items():
    src = next((f for f in (f"{stem}.onnx", f"{stem}_gelu_tanh.onnx") if os.path.exists(os.path.join(d, f))), None)
    if src is None:
        sys.exit(f"no ONNX export of {stem} in {d} (see {d}/export.log)")
    dst = src.replace(".onnx", ".shapes.onnx")
    shape_inference.infer_shapes_path(os.path.join(d, src), os.path.join(d, dst), data_prop=True)
    m = onnx.load(os.path.join(d, dst), load_external_data=False)
    node = next(n for n in m.graph.node if weight in n.input)
    targets[key] = {"onnx": dst, "exported": src, "mindir": f"{stem}.mindir", "weight": weight,
                    "onnxNode": node.name, "onnxOp": node.op_type, "onnxNodes": len(m.graph.node),
                    "identical": src == f"{stem}.onnx"}
    print(f"{key}: {dst}, {len(m.graph.node)} ONNX nodes, selects {node.op_type} {node.name}"
          + ("" if targets[key]["identical"] else " (NOT the identical Cell: see viewer-compare-export.py)"))
with open(os.path.join(d, "targets.json"), "w") as f:
    json.dump(targets, f, indent=1)
EOF

say "screenshots into $OUT"
nice node "$ROOT/scripts/viewer-compare.mjs" --venv "$VENV" --models "$MODELS" --out "$OUT" --bin "$BIN" | tee "$MODELS/timings.jsonl"

if command -v pngquant >/dev/null; then
  pngquant --force --skip-if-larger --quality 70-95 --ext .png "$OUT"/*.png || true
fi
if command -v optipng >/dev/null; then
  optipng -quiet -o2 "$OUT"/*.png
fi
du -k "$OUT"/*.png | sort -n | tail -n 3
