"""`cellscope export --format mindir`: weights above 1 GiB (MindSpore's split layout) and float16
weights (issue 18).

A generated Cell of two nn.Dense layers (8192 -> 16400 -> 8192: 1.07 GB of float32 weights, just
over mindspore.export's 1 GiB threshold) is exported with Cellscope's initialised weights (seed 0):
  * the files are `big_graph.mindir` + `big_variables/data_0` (what mindspore.export writes for
    file_name="big"; docs/mindir-notes.md "Split layout"), no `big.mindir`;
  * `nn.GraphCell(mindspore.load("big_graph.mindir"))(x)` equals `cellscope-run`'s output on the
    same seed within 1e-5 relative;
  * exporting again over the set writes the new data file under an unused name (data_1) before the
    graph file replaces the old one, and removes the old data file after: the new set loads too.
Disk: about 2.2 GB at the peak (two data files during the second export), in a temporary
directory removed at the end, not in pytest's kept tmp_path. About 25 s on two shared cores.

float16 weights (`nn.Dense(..., dtype=ms.float16)`, a float16 Parameter) are written as
mindspore.export writes them: data_type 10 (FLOAT16), 2 bytes of raw_data per element; GraphCell's
output equals the runtime's within 1e-5 (measured: identical).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ground_truth as gt  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn  # noqa: E402
from test_checkpoint import rel_error  # noqa: E402
from test_export_mindir import _binary, _run  # noqa: E402

BIG_SOURCE = '''import mindspore.nn as nn


class Big(nn.Cell):
    "Two Dense layers whose weights exceed 1 GiB (float32)."

    def __init__(self):
        super().__init__()
        self.a = nn.Dense(8192, 16400)
        self.b = nn.Dense(16400, 8192)

    def construct(self, x):
        return self.b(self.a(x))
'''


def test_export_above_one_gib_uses_split_layout_and_loads() -> None:
    gt.setup_mindspore()
    work = Path(tempfile.mkdtemp(prefix="cellscope-split-"))
    try:
        source = work / "big.py"
        source.write_text(BIG_SOURCE)
        x = np.random.default_rng(7).standard_normal((1, 8192)).astype(np.float32)
        np.save(work / "x.npy", x)
        out = work / "big.mindir"
        cmd = [str(_binary("cellscope")), "export", str(source), "--cell", "Big", "--input",
               "1,8192", "-o", str(out)]
        proc = _run(cmd)
        assert proc.returncode == 0, proc.stderr[-4000:]
        assert "split layout" in proc.stderr, proc.stderr
        graph = work / "big_graph.mindir"
        data0 = work / "big_variables" / "data_0"
        assert graph.is_file() and data0.is_file() and not out.exists()
        assert data0.stat().st_size > (1 << 30)
        with open(data0, "rb") as f:
            header = f.read(64)
        assert header == bytes([1]) + bytes(63)

        run = _run([str(_binary("cellscope-run")), str(source), "--cell", "Big", "--input-shape",
                    "1,8192", "--input", str(work / "x.npy"), "--output-npy",
                    str(work / "y.npy")])
        assert run.returncode == 0, run.stderr[-4000:]
        want = np.load(work / "y.npy").astype(np.float64)

        got = nn.GraphCell(ms.load(str(graph)))(ms.Tensor(x)).asnumpy()
        err = rel_error(got, want)
        print("split layout: GraphCell vs runtime %.3g" % err)
        assert got.shape == want.shape and err < 1e-5

        # Again over the existing set: the new data file takes an unused name, the old one goes.
        proc = _run(cmd)
        assert proc.returncode == 0, proc.stderr[-4000:]
        names = sorted(p.name for p in (work / "big_variables").iterdir())
        assert names == ["data_1"], names
        got = nn.GraphCell(ms.load(str(graph)))(ms.Tensor(x)).asnumpy()
        assert rel_error(got, want) < 1e-5
    finally:
        shutil.rmtree(work, ignore_errors=True)


HALF_SOURCE = '''import numpy as np
import mindspore as ms
import mindspore.nn as nn
from mindspore import Parameter, Tensor


class Half(nn.Cell):
    "Float16 weights: a float16 Dense and a float16 Parameter."

    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(8, 4, dtype=ms.float16)
        self.shift = Parameter(Tensor(np.full((4,), 0.5, np.float16)), name="shift")

    def construct(self, x):
        return self.fc(x) + self.shift
'''


def test_export_float16_weights_as_mindspore_writes_them(tmp_path: Path) -> None:
    gt.setup_mindspore()
    source = tmp_path / "half.py"
    source.write_text(HALF_SOURCE)
    out = tmp_path / "half.mindir"
    proc = _run([str(_binary("cellscope")), "export", str(source), "--cell", "Half", "--input",
                 "2,8:float16", "-o", str(out)])
    assert proc.returncode == 0, proc.stderr[-4000:]
    from mindspore.train import mind_ir_pb2
    model = mind_ir_pb2.ModelProto()
    model.ParseFromString(out.read_bytes())
    sizes = {p.ref_key: (p.data_type, len(p.raw_data), list(p.dims)) for p in model.graph.parameter}
    assert sizes == {"fc.weight": (10, 64, [4, 8]), "fc.bias": (10, 8, [4]),
                     "shift": (10, 8, [4])}, sizes
    x = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float16)
    np.save(tmp_path / "x.npy", x)
    run = _run([str(_binary("cellscope-run")), str(source), "--cell", "Half", "--input-shape",
                "2,8:float16", "--input", str(tmp_path / "x.npy"), "--output-npy",
                str(tmp_path / "y.npy")])
    assert run.returncode == 0, run.stderr[-4000:]
    want = np.load(tmp_path / "y.npy").astype(np.float64)
    got = nn.GraphCell(ms.load(str(out)))(ms.Tensor(x)).asnumpy()
    assert got.dtype == np.float16
    err = rel_error(got.astype(np.float64), want)
    print("float16 weights: GraphCell vs runtime %.3g" % err)
    assert err < 1e-5
