"""Issue 20's INT8 goal (docs/precision.md): LeNet-5 (tests/training/scripts/lenet_model_train.py)
trained by `cellscope train` on the real digits (tests/training/make_data.py: scikit-learn's
load_digits as MNIST files) keeps its top-1 accuracy within one point of fp32 on held-out digits
(the t10k split, never trained on) under int8 post-training quantisation, for each calibration
method. The binary is $CELLSCOPE_BIN (default build/cellscope)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "tests" / "training" / "scripts" / "lenet_model_train.py"
EPOCHS = 40  # 1,500 digits, batch 32: 1,840 steps, ~93 % on t10k
# The t10k split holds 297 digits: 9 batches of 32, 3 calibrate, 6 (192 digits) are compared.
CALIBRATION_BATCHES = 3
EVAL_BATCHES = 6


def binary() -> Path:
    b = Path(os.environ.get("CELLSCOPE_BIN", "build/cellscope"))
    b = b if b.is_absolute() else REPO_ROOT / b
    assert b.is_file(), f"cellscope not built at {b}"
    return b


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("quant")
    subprocess.run([sys.executable, str(REPO_ROOT / "tests" / "training" / "make_data.py"),
                    str(tmp)], check=True, stdout=subprocess.DEVNULL)
    ckpt = tmp / "lenet.ckpt"
    r = subprocess.run([str(binary()), "train", str(SCRIPT), "--data", str(tmp / "mnist"),
                        "--epochs", str(EPOCHS), "-o", str(ckpt), "--format", "json"],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-4000:]
    return tmp, ckpt


@pytest.mark.parametrize("method", ["minmax", "percentile", "kl"])
def test_lenet_int8_top1_within_one_point_of_fp32(trained, method):
    tmp, ckpt = trained
    table = tmp / f"lenet_{method}.json"
    r = subprocess.run([str(binary()), "train", str(SCRIPT), "--data", str(tmp / "mnist"),
                        "--steps", "0", "--checkpoint", str(ckpt), "--drift", "int8",
                        "--calibration", method, "--calibration-batches",
                        str(CALIBRATION_BATCHES), "--eval-batches", str(EVAL_BATCHES),
                        "--quant-table", str(table), "--format", "json"],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-4000:]
    drift = json.loads(r.stdout)["drift"]
    print(json.dumps({k: drift[k] for k in ("calibration", "samples", "accuracy_fp32",
                                             "accuracy_precision", "top1_agreement")}))
    assert drift["calibration"] == method
    assert drift["data"].startswith("the test split"), drift["data"]
    assert drift["samples"] == 32 * EVAL_BATCHES
    # A trained network (the comparison means nothing on an untrained one).
    assert drift["accuracy_fp32"] >= 0.9, drift
    assert abs(drift["accuracy_fp32"] - drift["accuracy_precision"]) <= 0.01 + 1e-9, drift
    # Every Conv2D and Dense ran on int8 operands, and the table names each by its weight.
    quantised = [d["node"] for d in drift["layers"] if d["quantized"]]
    assert len(quantised) == 5, drift["layers"]
    t = json.loads(table.read_text())
    assert sorted(n["weight"] for n in t["nodes"]) == sorted(
        f"{p}.weight" for p in ("conv1", "conv2", "fc1", "fc2", "fc3"))
