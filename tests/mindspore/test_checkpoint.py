"""Cellscope's CPU runtime with MindSpore checkpoints, against MindSpore itself.

For LeNet-5 (batch 64) and ResNet-50 (batch 1) from tests/corpus/models:
  * build the Cell in real MindSpore and give every parameter random values (weights scaled by
    fan-in so activations stay in range; BatchNorm gamma/beta and moving statistics random too,
    so a parameter that failed to load changes the output);
  * mindspore.save_checkpoint, save a random input .npy, run MindSpore's forward pass
    (set_train(False), PyNative CPU);
  * run `cellscope-run FILE --cell CELL --input-shape ... --input x.npy --ckpt net.ckpt
    --output-npy y.npy` and compare: max |cellscope - mindspore| / max |mindspore| must be below
    RTOL (1e-5 for LeNet-5, 1e-4 for ResNet-50's 53 convolutions: float32 summation order).
The same comparison with the checkpoint saved as safetensors (format="safetensors"), and a
control run without --ckpt must differ (the test can fail).

The runtime binary is $CELLSCOPE_RUN, else bench/cellscope-run next to $CELLSCOPE_BIN's build
directory (default build/), else $BUILD_DIR/bench/cellscope-run. Missing: skipped, unless
CELLSCOPE_REQUIRE_BIN=1 (then a failure).
"""
from __future__ import annotations

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

REPO_ROOT = gt.REPO_ROOT
TIMEOUT = int(os.environ.get("CELLSCOPE_TIMEOUT", "600"))

CASES: Dict[str, Dict] = {
    "lenet5": {"file": "models/lenet5.py", "cell": "LeNet5", "shape": (64, 1, 32, 32),
               "rtol": 1e-5},
    "resnet50": {"file": "models/resnet50.py", "cell": "resnet50()", "shape": (1, 3, 224, 224),
                 "rtol": 1e-4},
}


@pytest.fixture(scope="session")
def run_bin() -> Path:
    candidates: List[Path] = []
    if os.environ.get("CELLSCOPE_RUN"):
        candidates.append(Path(os.environ["CELLSCOPE_RUN"]))
    cellscope = Path(os.environ.get("CELLSCOPE_BIN", "build/cellscope"))
    candidates.append(cellscope.parent / "bench" / "cellscope-run")
    if os.environ.get("BUILD_DIR"):
        candidates.append(Path(os.environ["BUILD_DIR"]) / "bench" / "cellscope-run")
    for c in candidates:
        p = c if c.is_absolute() else REPO_ROOT / c
        if p.is_file() and os.access(p, os.X_OK):
            return p
    msg = "cellscope-run not found (tried %s; set CELLSCOPE_RUN)" % ", ".join(map(str, candidates))
    if os.environ.get("CELLSCOPE_REQUIRE_BIN") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


def randomize(net, rng: np.random.Generator) -> None:
    for p in net.get_parameters():
        name, shape = p.name, tuple(p.shape)
        if name.endswith("moving_variance"):
            v = rng.uniform(0.5, 1.5, shape)
        elif name.endswith("gamma"):
            v = rng.uniform(0.5, 1.5, shape)
        elif name.endswith(("beta", "moving_mean", "bias")):
            v = rng.normal(0.0, 0.1, shape)
        else:  # conv / dense weights: He-style scale keeps 50 layers in range
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
            v = rng.normal(0.0, np.sqrt(2.0 / fan_in), shape)
        p.set_data(ms.Tensor(v.astype(np.float32)))


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got.astype(np.float64) - want)) / np.max(np.abs(want)))


def run_cellscope(binary: Path, case: Dict, x_npy: Path, out: Path, ckpt: Path = None):
    shape = ",".join(str(d) for d in case["shape"])
    cmd = [str(binary), str(gt.CORPUS_DIR / case["file"]), "--cell", case["cell"],
           "--input-shape", shape, "--input", str(x_npy), "--output-npy", str(out)]
    if ckpt is not None:
        cmd += ["--ckpt", str(ckpt)]
    proc = subprocess.run(cmd, cwd=str(REPO_ROOT), capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, "`%s` failed (%d):\n%s" % (" ".join(cmd), proc.returncode,
                                                           proc.stderr[-4000:])
    return np.load(out), proc.stderr


@pytest.mark.parametrize("name", list(CASES))
def test_checkpoint_forward_matches_mindspore(name: str, run_bin: Path, tmp_path: Path) -> None:
    case = CASES[name]
    gt.setup_mindspore()
    module = gt.load_module(case["file"])
    net = gt.build_cell(module, case["cell"])
    rng = np.random.default_rng(1234)
    randomize(net, rng)
    net.set_train(False)
    x = rng.standard_normal(case["shape"]).astype(np.float32)
    want = net(ms.Tensor(x)).asnumpy().astype(np.float64)
    assert np.all(np.isfinite(want)) and np.max(np.abs(want)) > 0

    x_npy = tmp_path / "x.npy"
    np.save(x_npy, x)
    ckpt = tmp_path / "net.ckpt"
    ms.save_checkpoint(net, str(ckpt))
    names = {p.name for p in net.get_parameters()}

    got, log = run_cellscope(run_bin, case, x_npy, tmp_path / "y.npy", ckpt)
    assert got.shape == want.shape
    err = rel_error(got, want)
    print("%s: max rel error vs MindSpore %.3g (tolerance %g)" % (name, err, case["rtol"]))
    assert err < case["rtol"], log
    # Every parameter MindSpore saved was a parameter of the compiled Cell and was loaded.
    assert "loaded %d of %d parameters" % (len(names), len(names)) in log, log
    assert "kept at their initializer" not in log and "ignored" not in log, log

    # The same weights through MindSpore's safetensors writer.
    st = tmp_path / "net.safetensors"
    ms.save_checkpoint(net, str(st), format="safetensors")
    got_st, _ = run_cellscope(run_bin, case, x_npy, tmp_path / "y_st.npy", st)
    assert rel_error(got_st, want) < case["rtol"]

    # Control: the runtime's own initialisation gives a different answer.
    got0, _ = run_cellscope(run_bin, case, x_npy, tmp_path / "y0.npy")
    assert rel_error(got0, want) > 100 * case["rtol"]
