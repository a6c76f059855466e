"""Cellscope's CPU kernels against MindSpore itself, operator model by operator model.

For each model of tests/runtime/models (the files the torch tier also checks): run
`cellscope-run FILE --input-shape ... --seed 3 --out DIR` (the runtime initialises the
parameters and draws the inputs and writes both as .npy), load those parameters and inputs into
the same Cell built by real MindSpore 2.10 (PyNative, CPU, set_train(False)), run it, and compare
every output: same shape, same dtype, max |cellscope - mindspore| <= ATOL + RTOL * max |mindspore|.
Where torch needs a stand-in for an operator (nn.Pad's SYMMETRIC mode, MindSpore's truncated
Mod, its int32 TopK indices), this is the check against the definition.

The runtime binary: see test_checkpoint.py (run_bin). Missing: skipped, unless
CELLSCOPE_REQUIRE_BIN=1.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ground_truth as gt  # noqa: E402
import mindspore as ms  # noqa: E402
from test_checkpoint import TIMEOUT, run_bin  # noqa: E402,F401  (the fixture)

MODELS = HERE.parent / "runtime" / "models"
RTOL, ATOL = 1e-5, 1e-5

# model file, input shapes (float32, drawn by the runtime from --seed)
CASES = {
    "select_pad": ["2,4,5,6"],
    "conv1d_pool": ["2,4,10"],
    "resize_transpose": ["2,4,5,6"],
    "interpolate": ["2,3,7", "2,3,5,6", "1,2,3,4,5"],
    "recurrent": ["2,7,6"],
    "attention": ["2,7,6", "2,3,5"],
    "conv3d": ["2,4,5,6,7"],
    "branches": ["3,4"],
    "more_ops": ["2,4,5,6"],
    "functional_args": ["5,7"],
    "activations": ["4,6", "4,6"],
    "conv_family": ["2,4,17,19"],
    "pool_family": ["2,3,11,13"],
    "dense_norm": ["2,4,6,6"],
    "pad_layers": ["2,4,5,6"],
    "numpy_tables": ["2"],
    "roll": ["2,4,5,6"],
    "clip_bounds": ["2,3,4"],
}


def load(name: str):
    spec = importlib.util.spec_from_file_location("cellscope_rt_" + name, MODELS / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    # GRAPH_MODE's parser imports the construct's module by name
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.net


@pytest.mark.parametrize("name", list(CASES))
def test_runtime_outputs_equal_mindspore(name: str, run_bin: Path, tmp_path: Path) -> None:  # noqa: F811
    gt.setup_mindspore()
    out = tmp_path / name
    cmd = [str(run_bin), str(MODELS / (name + ".py")), "--out", str(out), "--dump-all",
           "--seed", "3"]
    for s in CASES[name]:
        cmd += ["--input-shape", s]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-4000:]

    net = load(name)
    net.set_train(False)
    for p in net.get_parameters():
        f = out / "params" / (p.name + ".npy")
        assert f.is_file(), "the runtime wrote no value for parameter %s" % p.name
        p.set_data(ms.Tensor(np.load(f)))
    inputs = [ms.Tensor(np.load(out / "inputs" / ("%d.npy" % i))) for i in range(len(CASES[name]))]
    want = net(*inputs)
    want = want if isinstance(want, tuple) else (want,)
    bad = []
    for i, w in enumerate(want):
        w = w.asnumpy()
        got = np.load(out / "outputs" / ("%d.npy" % i))
        if got.shape != w.shape or got.dtype != w.dtype:
            bad.append("output %d: %s %s, MindSpore %s %s" % (i, got.shape, got.dtype, w.shape,
                                                             w.dtype))
            continue
        err = float(np.max(np.abs(got.astype(np.float64) - w))) if w.size else 0.0
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        print("%s output %d: %s %s max abs err %.3g (scale %.3g)" % (name, i, w.shape, w.dtype,
                                                                    err, scale))
        if err > ATOL + RTOL * scale:
            bad.append("output %d: max abs err %.3g (scale %.3g)" % (i, err, scale))
    assert not bad, "\n".join(bad)
