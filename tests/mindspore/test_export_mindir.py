"""`cellscope export --format mindir` against MindSpore 2.10 itself (issue 18).

For LeNet-5 (batch 4), ResNet-50 and MobileNetV2 (batch 1) from tests/corpus/models, and a
transformer block (BLOCK_SOURCE):
  * build the Cell in MindSpore, give every parameter random values (test_checkpoint.randomize)
    and save them with mindspore.save_checkpoint;
  * `cellscope export FILE --format mindir --input SHAPE --checkpoint net.ckpt -o net.mindir`;
  * `nn.GraphCell(mindspore.load(net.mindir))(x)` must equal Cellscope's runtime output on the same
    checkpoint (`cellscope-run ... --ckpt net.ckpt --output-npy`) within 1e-5 relative
    (max |a - b| / max |b|), and MindSpore's own forward pass of the Cell within the runtime
    tier's tolerance;
  * every function primitive in the file (prim_type 2) is a class of
    mindspore.ops.auto_generate.gen_ops_prim whose `__call__` + `__init__` parameters are as many
    as the node's inputs: the operator table's MindirDef rows checked by introspection.
A refusal: an operator with no MindIR mapping exits 1 with a located message naming it and
leaves an existing output file untouched.

Binaries: $CELLSCOPE_BIN (default build/cellscope) and bench/cellscope-run beside it; missing:
skipped, unless CELLSCOPE_REQUIRE_BIN=1.
"""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ground_truth as gt  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402
from test_checkpoint import randomize, rel_error  # noqa: E402

REPO_ROOT = gt.REPO_ROOT
TIMEOUT = int(os.environ.get("CELLSCOPE_TIMEOUT", "600"))

# A transformer block: the MindIR rows of LayerNorm, Softmax, BatchMatMul, GeLU, Transpose,
# Reshape and nn.Dense on a 3-D input (MatMul between two Reshapes).
BLOCK_SOURCE = '''import mindspore.nn as nn
import mindspore.ops as ops


class Block(nn.Cell):
    "A transformer block: LayerNorm, Dense, Reshape, Transpose, BatchMatMul, Softmax, GELU."

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.norm1 = nn.LayerNorm((dim,), epsilon=1e-6)
        self.qkv = nn.Dense(dim, dim)
        self.bmm = ops.BatchMatMul(transpose_b=True)
        self.bmm2 = ops.BatchMatMul()
        self.softmax = nn.Softmax(axis=-1)
        self.reshape = ops.Reshape()
        self.transpose = ops.Transpose()
        self.norm2 = nn.LayerNorm((dim,), epsilon=1e-6)
        self.fc1 = nn.Dense(dim, 2 * dim)
        self.act = nn.GELU()
        self.fc2 = nn.Dense(2 * dim, dim)

    def construct(self, x):
        h = self.norm1(x)
        q = self.qkv(h)
        q = self.reshape(q, (2, 8, self.heads, self.head_dim))
        q = self.transpose(q, (0, 2, 1, 3))
        a = self.softmax(self.bmm(q, q))
        o = self.bmm2(a, q)
        o = self.transpose(o, (0, 2, 1, 3))
        o = self.reshape(o, (2, 8, 32))
        x = x + o
        return x + self.fc2(self.act(self.fc1(self.norm2(x))))
'''

CASES: Dict[str, Dict] = {
    "lenet5": {"file": "models/lenet5.py", "cell": "LeNet5", "select": ["--cell", "LeNet5"],
               "shape": (4, 1, 32, 32), "ms_rtol": 1e-5},
    "resnet50": {"file": "models/resnet50.py", "cell": "resnet50()",
                 "select": ["--entry", "resnet50()"], "shape": (1, 3, 224, 224),
                 "ms_rtol": 1e-4},
    "mobilenetv2": {"file": "models/mobilenetv2.py", "cell": "MobileNetV2",
                    "select": ["--cell", "MobileNetV2"], "shape": (1, 3, 224, 224),
                    "ms_rtol": 1e-4},
    "transformer_block": {"source": BLOCK_SOURCE, "cell": "Block", "select": ["--cell", "Block"],
                          "shape": (2, 8, 32), "ms_rtol": 1e-5},
}


def _binary(name: str) -> Path:
    cellscope = Path(os.environ.get("CELLSCOPE_BIN", "build/cellscope"))
    if not cellscope.is_absolute():
        cellscope = REPO_ROOT / cellscope
    p = cellscope if name == "cellscope" else cellscope.parent / "bench" / name
    if p.is_file() and os.access(p, os.X_OK):
        return p
    msg = "%s not found at %s" % (name, p)
    if os.environ.get("CELLSCOPE_REQUIRE_BIN") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


def _run(cmd: List[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=str(REPO_ROOT), capture_output=True, text=True,
                          timeout=TIMEOUT)


def _export(case: Dict, out: Path, ckpt: Path = None) -> subprocess.CompletedProcess:
    shape = ",".join(str(d) for d in case["shape"])
    cmd = [str(_binary("cellscope")), "export", str(gt.CORPUS_DIR / case["file"]),
           *case["select"], "--input", shape, "--format", "mindir", "-o", str(out)]
    if ckpt is not None:
        cmd += ["--checkpoint", str(ckpt)]
    return _run(cmd)


def _function_primitive_arity(name: str):
    """len(__call__ params) + len(__init__ params) of a gen_ops_prim class, or None."""
    from mindspore.ops.auto_generate import gen_ops_prim
    cls = getattr(gen_ops_prim, name, None)
    if cls is None:
        return None
    def params(f):
        return [p for p in inspect.signature(f).parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return len(params(cls.__call__)) + len(params(cls.__init__))


def _exported_arity(op_type: str, tmp_path: Path):
    """Inputs of `op_type`'s node in MindSpore's own export of a one-layer Cell, for function
    primitives that are not gen_ops_prim classes (BatchNorm's legacy class)."""
    cells = {"BatchNorm": (lambda: nn.BatchNorm2d(4), (1, 4, 3, 3))}
    if op_type not in cells:
        return None
    make, shape = cells[op_type]
    net = make()
    net.set_train(False)
    path = tmp_path / ("ms_" + op_type)
    ms.export(net, ms.Tensor(np.ones(shape, np.float32)), file_name=str(path),
              file_format="MINDIR")
    from mindspore.train import mind_ir_pb2
    model = mind_ir_pb2.ModelProto()
    model.ParseFromString(Path(str(path) + ".mindir").read_bytes())
    keys = {p.name for p in model.primitives if p.op_type == op_type and p.prim_type == 2}
    counts = {len(n.input) for n in model.graph.node if n.op_type[len("REF::"):] in keys}
    return counts.pop() if len(counts) == 1 else None


@pytest.mark.parametrize("name", list(CASES))
def test_export_loads_in_mindspore_and_matches_runtime(name: str, tmp_path: Path) -> None:
    case = dict(CASES[name])
    if "source" in case:  # written here: an absolute path joins the corpus directory as itself
        source = tmp_path / (name + ".py")
        source.write_text(case["source"])
        case["file"] = str(source)
    gt.setup_mindspore()
    net = gt.build_cell(gt.load_module(case["file"]), case["cell"])
    rng = np.random.default_rng(4321)
    randomize(net, rng)
    net.set_train(False)
    x = rng.standard_normal(case["shape"]).astype(np.float32)
    want_ms = net(ms.Tensor(x)).asnumpy().astype(np.float64)
    ckpt = tmp_path / "net.ckpt"
    ms.save_checkpoint(net, str(ckpt))
    x_npy = tmp_path / "x.npy"
    np.save(x_npy, x)

    mindir = tmp_path / "net.mindir"
    proc = _export(case, mindir, ckpt)
    assert proc.returncode == 0, proc.stderr[-4000:]
    # The summary is a log (stderr); stdout stays empty.
    assert mindir.is_file() and "wrote" in proc.stderr and proc.stdout == "", proc.stdout

    shape = ",".join(str(d) for d in case["shape"])
    y_npy = tmp_path / "y.npy"
    run = _run([str(_binary("cellscope-run")), str(gt.CORPUS_DIR / case["file"]),
                *case["select"], "--input-shape", shape, "--input", str(x_npy), "--ckpt",
                str(ckpt), "--output-npy", str(y_npy)])
    assert run.returncode == 0, run.stderr[-4000:]
    runtime_out = np.load(y_npy).astype(np.float64)

    graph = ms.load(str(mindir))
    got = nn.GraphCell(graph)(ms.Tensor(x)).asnumpy()
    assert got.shape == runtime_out.shape
    err_runtime = rel_error(got, runtime_out)
    err_ms = rel_error(got, want_ms)
    print("%s: GraphCell vs runtime %.3g, vs MindSpore's Cell %.3g" % (name, err_runtime,
                                                                      err_ms))
    assert err_runtime < 1e-5
    assert err_ms < case["ms_rtol"]

    # The file's function primitives against the installed MindSpore's generated op classes.
    from mindspore.train import mind_ir_pb2
    model = mind_ir_pb2.ModelProto()
    model.ParseFromString(mindir.read_bytes())
    prims = {p.name: p for p in model.primitives}
    checked = 0
    for node in model.graph.node:
        if not node.op_type.startswith("REF::"):
            continue
        prim = prims[node.op_type[len("REF::"):]]
        if prim.prim_type != 2:
            continue
        arity = _function_primitive_arity(prim.op_type)
        if arity is None:
            arity = _exported_arity(prim.op_type, tmp_path)
        assert arity is not None, "%s is no gen_ops_prim class" % prim.op_type
        assert len(node.input) == arity, (prim.op_type, list(node.input), arity)
        checked += 1
    assert checked > 0
    # The weights travel inline under their parameter names.
    names = {p.name for p in net.get_parameters()}
    assert {p.ref_key for p in model.graph.parameter} == names


def test_export_refuses_unmapped_operator_and_keeps_old_file(tmp_path: Path) -> None:
    model = tmp_path / "net.py"
    model.write_text(
        "import mindspore.nn as nn\n"
        "import mindspore.ops as ops\n"
        "\n"
        "class Net(nn.Cell):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Dense(4, 3)\n"
        "\n"
        "    def construct(self, x):\n"
        "        return ops.sigmoid(self.fc(x))\n")
    out = tmp_path / "net.mindir"
    out.write_bytes(b"old contents")
    proc = _run([str(_binary("cellscope")), "export", str(model), "--input", "2,4",
                 "-o", str(out)])
    assert proc.returncode == 1, proc.stderr
    assert "net.py:10:" in proc.stderr and "no MindIR mapping" in proc.stderr, proc.stderr
    assert "[export-unsupported-op]" in proc.stderr, proc.stderr
    assert out.read_bytes() == b"old contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.mindir", "net.py"]
