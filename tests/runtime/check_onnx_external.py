#!/usr/bin/env python3
"""`cellscope export --format onnx` above protobuf's 2 GiB limit: ONNX external data (issue 18).

A generated Cell of two nn.Dense layers (16384 -> 16400 -> 16384: 2.15 GB of float32 weights) is
exported with its initialised weights (seed 0):
  * the files are big.onnx (the structure) + big.onnx.data (the weights: every weight initializer
    has data_location EXTERNAL and location / offset / length entries, offsets 4096-aligned);
  * onnx.checker.check_model(path) accepts it and onnxruntime's output on x equals
    `cellscope-run`'s within 1e-5 of the output's scale;
  * exporting again over the set writes big.onnx.data.1 before big.onnx is replaced, then removes
    big.onnx.data: the new pair loads too.
Run by tests/runtime/run_onnx.sh after check_onnx.py. Disk: about 4.3 GB at the peak, in a
temporary directory removed at the end.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

SOURCE = '''import mindspore.nn as nn


class Big(nn.Cell):
    "Two Dense layers whose float32 weights exceed 2 GiB."

    def __init__(self):
        super().__init__()
        self.a = nn.Dense(16384, 16400)
        self.b = nn.Dense(16400, 16384)

    def construct(self, x):
        return self.b(self.a(x))
'''


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p


def check_model(path, x, want):
    model = onnx.load(path, load_external_data=False)
    external = 0
    for t in model.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            kv = {e.key: e.value for e in t.external_data}
            assert int(kv["offset"]) % 4096 == 0, kv
            assert not t.HasField("raw_data")
            external += 1
    assert external == 4, external
    onnx.checker.check_model(path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    err = float(np.abs(got.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30))
    assert got.shape == want.shape and err < 1e-5, err
    return err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--run", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cellscope-onnx-external-")
    try:
        src = os.path.join(work, "big.py")
        with open(src, "w") as f:
            f.write(SOURCE)
        out = os.path.join(work, "big.onnx")
        cmd = [args.bin, "export", src, "--cell", "Big", "--input", "1,16384", "-o", out]
        p = run(cmd)
        assert "external data" in p.stderr, p.stderr
        assert sorted(os.listdir(work)) == ["big.onnx", "big.onnx.data", "big.py"], os.listdir(work)
        assert os.path.getsize(out) < 1 << 20
        assert os.path.getsize(out + ".data") > (1 << 31)

        x = np.random.default_rng(3).standard_normal((1, 16384)).astype(np.float32)
        np.save(os.path.join(work, "x.npy"), x)
        run([args.run, src, "--cell", "Big", "--input-shape", "1,16384", "--input",
             os.path.join(work, "x.npy"), "--output-npy", os.path.join(work, "y.npy")])
        want = np.load(os.path.join(work, "y.npy")).astype(np.float64)
        err = check_model(out, x, want)

        run(cmd)  # again over the existing pair
        names = sorted(os.listdir(work))
        assert names == ["big.onnx", "big.onnx.data.1", "big.py", "x.npy", "y.npy"], names
        check_model(out, x, want)
        print(f"onnx external data (2.15 GB of weights): onnxruntime vs runtime {err:.2g}; "
              "re-export over the pair: ok")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
