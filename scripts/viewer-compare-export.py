"""Exports the corpus' ResNet-50 and BERT-base with MindSpore itself, for the viewer comparison
(scripts/viewer-compare.sh, docs/view.md): the very Cells Cellscope reads from source, built as
the files build them, exported to MindIR and ONNX.

    python scripts/viewer-compare-export.py REPO OUTDIR

Run it with a Python that has MindSpore 2.x (CPU). Writes OUTDIR/resnet50.{mindir,onnx},
OUTDIR/bert_base.mindir and, because MindSpore 2.10 cannot export BERT-base to ONNX (its exact
GELU lowers to Erf: "Exporting Erf operator is not yet supported"), OUTDIR/bert_base_gelu_tanh.onnx:
the same Cell with its 12 `nn.GELU(approximate=False)` replaced by `nn.GELU(approximate=True)`
(the tanh form, which MindSpore's ONNX exporter supports); nothing else differs. Each failure is
printed, never hidden.
"""
import importlib
import os
import sys

import numpy as np
import mindspore as ms
from mindspore import nn


def main() -> int:
    repo, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    # GRAPH_MODE parses construct from the module's source: the model files must be importable.
    sys.path.insert(0, os.path.join(repo, "tests", "corpus", "models"))
    resnet = importlib.import_module("resnet50")
    bert = importlib.import_module("bert_base")

    def export(net, inputs, name, fmt):
        try:
            ms.export(net, *inputs, file_name=os.path.join(out, name), file_format=fmt)
            print(f"exported {name}.{fmt.lower()}")
            return True
        except Exception as e:  # reported, and the comparison says so
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            print(f"cannot export {name} to {fmt}: {type(e).__name__}: {first}")
            return False

    net = resnet.resnet50()
    net.set_train(False)
    x = ms.Tensor(np.ones((1, 3, 224, 224)), ms.float32)
    ok = export(net, [x], "resnet50", "MINDIR") & export(net, [x], "resnet50", "ONNX")

    net = bert.bert_base()
    net.set_train(False)
    ids = ms.Tensor(np.ones((1, 128)), ms.int32)
    ok &= export(net, [ids], "bert_base", "MINDIR")
    if not export(net, [ids], "bert_base", "ONNX"):
        # A fresh Cell: the one whose export failed keeps its compiled graph.
        net = bert.bert_base()
        net.set_train(False)
        replaced = 0
        for _, cell in net.cells_and_names():
            if isinstance(getattr(cell, "intermediate_act", None), nn.GELU):
                cell.intermediate_act = nn.GELU(approximate=True)
                replaced += 1
        print(f"bert_base: {replaced} exact GELUs replaced by the tanh approximation for ONNX")
        ok &= export(net, [ids], "bert_base_gelu_tanh", "ONNX")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
