#!/usr/bin/env bash
# The demo: Cellscope catches the bug in the article's own MNIST network, shows LeNet-5's
# compiled graph, then drives the language server through the article's network as an editor
# would (diagnostics, hover, inlay hints, quick fixes applied and re-checked). `cellscope check`
# exits 1 on the buggy file: that is the expected outcome.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
CELLSCOPE="$BUILD_DIR/cellscope"
BUGGY=tests/corpus/buggy/mnist_article_bug.py
MODEL=tests/corpus/models/lenet5.py

for f in "$CELLSCOPE" "$BUGGY" "$MODEL"; do
  [[ -e "$f" ]] || { echo "demo: $f is missing" >&2; exit 1; }
done

banner() { printf '\n\033[1m== %s\033[0m\n\n' "$*"; }

banner "1. The article's MNIST network: cellscope check $BUGGY"
echo "   (nn.Dense(1600, 128) after a flatten of 64*12*12 = 9216 features, and ops.MaxPool2d,"
echo "    which MindSpore does not have; found without running anything)"
echo
rc=0
"$CELLSCOPE" check "$BUGGY" || rc=$?
if ((rc != 1)); then
  echo "demo: expected 'cellscope check' to report errors (exit 1), got exit $rc" >&2
  exit 1
fi
echo
echo "   -> exit code $rc: the errors above fail a CI pipeline (see also --format sarif)."

banner "2. The same check as SARIF 2.1.0 for CI code scanning (--format sarif), summarised"
rc=0
sarif=$("$CELLSCOPE" check "$BUGGY" --format sarif) || rc=$?
((rc == 1)) || { echo "demo: expected exit 1 from check --format sarif, got $rc" >&2; exit 1; }
python3 -c '
import json, sys
log = json.load(sys.stdin)
run = log["runs"][0]
print("   SARIF", log["version"], "from", run["tool"]["driver"]["name"], run["tool"]["driver"]["version"])
for r in run["results"]:
    loc = r["locations"][0]["physicalLocation"]
    print("   {:<7} {:<14} {}:{}:{}".format(r["level"], r["ruleId"], loc["artifactLocation"]["uri"],
          loc["region"]["startLine"], loc["region"]["startColumn"]))
' <<<"$sarif"

banner "3. LeNet-5 compiled to a shape-checked graph: cellscope graph --format text $MODEL"
"$CELLSCOPE" graph "$MODEL" --format text

banner "4. LeNet-5 with an explicit input: --input 32,1,32,32"
out=$("$CELLSCOPE" graph "$MODEL" --input 32,1,32,32 --format text)
head -n 8 <<<"$out"
echo "   ..."

banner "5. The language server (what VS Code or neovim sees): a scripted session with cellscope lsp"
python3 scripts/lsp_demo.py "$CELLSCOPE" "$BUGGY"

banner "6. The live graph view: a self-contained snapshot (cellscope graph --format html)"
mkdir -p "$BUILD_DIR/demo"
"$CELLSCOPE" graph tests/corpus/models/resnet50.py --target ascend910 --format html \
  -o "$BUILD_DIR/demo/resnet50-ascend910.html"
echo "   wrote $BUILD_DIR/demo/resnet50-ascend910.html: open it in any browser (semantic,"
echo "   optimization and hardware layers of ResNet-50 on Ascend 910, no server needed)."
echo "   Live, following every save: $CELLSCOPE view tests/corpus/models/resnet50.py --target ascend910"

banner "7. The VS Code extension, packaged with this build's binary"
vsix=$(CELLSCOPE_BIN="$CELLSCOPE" bash scripts/extension.sh package | tail -n 1)
echo "   $vsix"
echo "   Install it: code --install-extension $vsix"
echo "   Then open a model file: squiggles and shapes as you type; Ctrl+Shift+P"
echo "   \"MindSpore: Visualize Graph\" opens the live graph beside the editor."

echo
echo "demo: done"
