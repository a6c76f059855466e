#!/usr/bin/env python3
"""ONNX export against onnx's checker and onnxruntime (PyPI onnx / onnxruntime, run with the
torchvenv: ~/.cache/cellscope/torchvenv/bin/python).

For each model, `cellscope-run` runs the Cell on the CPU runtime (weights initialised from seed 0,
or loaded from a checkpoint) and writes its input and output as .npy; `cellscope export --format
onnx` writes the same Cell with the same weights. The .onnx must pass
onnx.checker.check_model(full_check=True) (which also runs ONNX's shape inference), declare the
expected opset, and onnxruntime's output for the runtime's input must equal the runtime's output:
max|ort - runtime| <= 1e-5 * max|runtime| (relative to the output's scale).

Weights: "init" exports the initialised weights; "ckpt" writes a .safetensors checkpoint (plain
numpy, the format's header + raw bytes) with random values for every parameter -- BatchNorm's
moving mean and variance included, so the inference-mode BatchNorm is exercised with non-trivial
statistics -- loaded by both `cellscope-run --ckpt` and `cellscope export --checkpoint`.

Atomic writes: `cellscope export` killed (SIGKILL) at random moments while replacing a file leaves
the old file or a complete model, never a partial one.

Refusals: a model with an operator that has no ONNX mapping exits 1, names the operator and its
line, and leaves an existing destination file untouched; a model with a symbolic input dimension
is refused the same way.

Usage: ~/.cache/cellscope/torchvenv/bin/python tests/runtime/check_onnx.py
           [--bin build/cellscope] [--run build/bench/cellscope-run] [--only NAME] [-v]
Exit status 0 when every check passes.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(REPO, "tests", "corpus", "models")
# Model sources shared with the MindIR ground truth (tests/mindspore/test_export_mindir.py).
EXPORT_MODELS = os.path.join(REPO, "tests", "export_models")
OPSET = 28
RTOL = 1e-5

# A model of the remaining mapped operators: 'pad' and 'valid' convolutions with bias, BiasAdd,
# AvgPool, AdaptiveAvgPool2d to 2x2 (even windows), activations (HSwish, HSigmoid, SiLU ...), Softmax, transposed
# BatchMatMul, a scalar operand, Dense with an activation, ReduceSum, getitem.
OPS_MODEL = """import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import Parameter, Tensor
import numpy as np


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, pad_mode='pad', padding=(1, 2, 0, 1), has_bias=True)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, pad_mode='valid', group=2)
        self.bias = Parameter(Tensor(np.linspace(-1, 1, 8).astype(np.float32)), name='b')
        self.avg = nn.AvgPool2d(kernel_size=2, stride=1, pad_mode='same')
        self.adapt = nn.AdaptiveAvgPool2d((2, 2))
        self.fc = nn.Dense(32, 6, activation='tanh')
        self.softmax = nn.Softmax(axis=-1)
        self.gelu = nn.GELU(approximate=False)
        self.hswish = nn.HSwish()
        self.hsigmoid = nn.HSigmoid()
        self.silu = nn.SiLU()

    def construct(self, x):
        y = ops.sigmoid(self.conv1(x))
        y = ops.BiasAdd()(self.conv2(y), self.bias)
        y = self.adapt(self.avg(self.hswish(y))) * 0.5
        y = self.silu(y) + self.hsigmoid(y)
        f = self.fc(ops.reshape(y, (2, 32)))
        a = ops.reshape(f, (2, 2, 3))
        att = self.softmax(ops.BatchMatMul(transpose_b=True)(a, a))
        z = self.gelu(ops.matmul(att, a)) - 1.0
        return ops.ReduceSum(keep_dims=False)(z, 1) + z[:, 0]
"""

# The second round of rows (issue 18): HSwish, Split (ops.split by a size, ops.chunk), Stack
# (a negative axis, ops.Stack(axis)), CumSum (ops.cumsum, Tensor.cumsum), BroadcastTo.
OPS2_MODEL = open(os.path.join(EXPORT_MODELS, "ops2.py")).read()

# GroupNorm, ops.LayerNorm's three outputs (mean and variance as ReduceMean nodes), nearest and
# bilinear resizes (half-pixel and align_corners).
OPS3_MODEL = open(os.path.join(EXPORT_MODELS, "ops3.py")).read()

# nn.Pad and ops.pad in constant mode (a value other than 0).
OPS4_MODEL = open(os.path.join(EXPORT_MODELS, "ops4.py")).read()

# ReduceVar: Tensor.var and ops.var, ddof 0 and 1 (ReduceMean, Sub, Mul, ReduceSum, Div).
OPS5_MODEL = open(os.path.join(EXPORT_MODELS, "ops5.py")).read()

# MaxPool2d / AvgPool2d with padding, ceil_mode (pad and valid), count_include_pad False.
OPS6_MODEL = open(os.path.join(EXPORT_MODELS, "ops6.py")).read()

# Dilated MaxPool2d (MaxPool's dilations), with padding and ceil_mode.
OPS9_MODEL = open(os.path.join(EXPORT_MODELS, "ops9.py")).read()

# FloorDiv (Div + Floor) and ops.zeros / ops.Zeros (initializers).
OPS8_MODEL = open(os.path.join(EXPORT_MODELS, "ops8.py")).read()

# ops.L2Normalize (clamped rows too) and the constant padding layers.
OPS12_MODEL = open(os.path.join(EXPORT_MODELS, "ops12.py")).read()

# Roll (mindspore.numpy.roll, ops.roll, flattened): Slice pairs and Concat.
OPS13_MODEL = open(os.path.join(EXPORT_MODELS, "ops13.py")).read()

# nn.Conv1d in three pad modes; splits into unequal pieces (ops.split, mindspore.numpy.split).
OPS14_MODEL = open(os.path.join(EXPORT_MODELS, "ops14.py")).read()

SOURCES = {"ops": OPS_MODEL, "ops2": OPS2_MODEL, "ops3": OPS3_MODEL, "ops4": OPS4_MODEL,
           "ops5": OPS5_MODEL, "ops6": OPS6_MODEL, "ops8": OPS8_MODEL,
           "ops9": OPS9_MODEL, "ops12": OPS12_MODEL, "ops13": OPS13_MODEL,
           "ops14": OPS14_MODEL}

# name, model file (a corpus model, or SOURCES[name] written to the work directory), extra
# arguments for both binaries, weight modes (BERT-base, ViT-B/16: initialised only, their
# checkpoints would add 0.4 GB of temporary files each)
CASES = [
    ("lenet5", "lenet5.py", [], ("init", "ckpt")),
    # resnet50.py defines resnet50() and resnet101(): export refuses to guess between root Cells.
    ("resnet50", "resnet50.py", ["--entry", "resnet50()"], ("init", "ckpt")),
    ("mobilenetv2", "mobilenetv2.py", [], ("init", "ckpt")),
    ("vit_b16", "vit_b16.py", [], ("init",)),
    ("bert_base", "bert_base.py", [], ("init",)),
    ("mnist_article", "mnist_article.py", [], ("init", "ckpt")),
    ("ops", None, ["--input-shape", "2,3,12,14"], ("init", "ckpt")),
    ("ops2", None, ["--input-shape", "2,3,8,8"], ("init", "ckpt")),
    ("ops3", None, ["--input-shape", "2,3,8,8"], ("init", "ckpt")),
    ("ops4", None, ["--input-shape", "2,3,8,8"], ("init", "ckpt")),
    ("ops5", None, ["--input-shape", "2,3,8,8"], ("init", "ckpt")),
    ("ops6", None, ["--input-shape", "2,3,9,9"], ("init", "ckpt")),
    ("ops8", None, ["--input-shape", "2,3,8,8"], ("init", "ckpt")),
    ("ops9", None, ["--input-shape", "2,3,9,9"], ("init", "ckpt")),
    ("ops12", None, ["--input-shape", "2,3,6,7"], ("init", "ckpt")),
    ("ops13", None, ["--input-shape", "2,3,6,5"], ("init", "ckpt")),
    ("ops14", None, ["--input-shape", "2,4,17"], ("init", "ckpt")),
]


def run(cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)


def random_checkpoint(params_dir, path, seed):
    rng = np.random.default_rng(seed)
    tensors = {}
    for f in sorted(glob.glob(os.path.join(params_dir, "*.npy"))):
        name = os.path.basename(f)[:-4]
        a = np.load(f)
        if a.dtype.kind != "f":
            continue
        if name.endswith("moving_variance"):
            v = rng.uniform(0.5, 2.0, a.shape)
        elif name.endswith("moving_mean") or name.endswith("beta"):
            v = rng.normal(0, 0.1, a.shape)
        elif name.endswith("gamma"):
            v = rng.uniform(0.5, 1.5, a.shape)
        else:  # keep the initialiser's scale so activations stay O(1) through ResNet-50
            scale = float(np.std(a)) or 0.05
            v = rng.normal(0, scale, a.shape)
        tensors[name] = v
    write_safetensors(path, tensors)


def check_case(args, name, model, extra, weights, work):
    if model is None:
        src = os.path.join(work, f"{name}.py")
        with open(src, "w") as f:
            f.write(SOURCES[name])
    else:
        src = os.path.join(MODELS, model)
    out_dir = os.path.join(work, f"{name}-{weights}")
    onnx_path = os.path.join(work, f"{name}-{weights}.onnx")
    run_cmd = [args.run, src, "--seed", "0", "--input", "random:7", "--out", out_dir] + extra
    exp_extra = ["--input" if a == "--input-shape" else a for a in extra]
    exp_cmd = [args.bin, "export", src, "--format", "onnx", "-o", onnx_path] + exp_extra
    if weights == "ckpt":
        init_dir = os.path.join(work, f"{name}-init")
        if not os.path.isdir(init_dir):
            run([args.run, src, "--seed", "0", "--out", init_dir] + extra)
        ckpt = os.path.join(work, f"{name}.safetensors")
        random_checkpoint(os.path.join(init_dir, "params"), ckpt, seed=11)
        run_cmd += ["--ckpt", ckpt]
        exp_cmd += ["--checkpoint", ckpt]
    run(run_cmd)
    run(exp_cmd)
    m = onnx.load(onnx_path)
    onnx.checker.check_model(m, full_check=True)
    opsets = {o.domain: o.version for o in m.opset_import}
    if opsets.get("", None) != OPSET:
        return False, f"opset_import {opsets}, expected ai.onnx {OPSET}"
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    feeds = {}
    for i, inp in enumerate(sess.get_inputs()):
        feeds[inp.name] = np.load(os.path.join(out_dir, "inputs", f"{i}.npy"))
    got = sess.run(None, feeds)
    ok, lines = True, []
    for i, g in enumerate(got):
        ref = np.load(os.path.join(out_dir, "outputs", f"{i}.npy"))
        if g.shape != ref.shape:
            return False, f"output {i}: shape {g.shape} vs runtime {ref.shape}"
        err = float(np.max(np.abs(g.astype(np.float64) - ref)))
        scale = float(np.max(np.abs(ref))) or 1.0
        good = err <= RTOL * scale
        ok = ok and good
        lines.append(f"out{i} max|diff| {err:.3g} (rel {err / scale:.3g}, nodes {len(m.graph.node)})")
    for path in (onnx_path,):
        os.remove(path)
    shutil.rmtree(out_dir)
    return ok, "; ".join(lines)


UNMAPPED = '''import mindspore.nn as nn
import mindspore.ops as ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4)

    def construct(self, x):
        y = self.fc(x)
        return ops.logsumexp(y, 1)
'''

SYMBOLIC = '''import mindspore.nn as nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4)

    def construct(self, x):
        return self.fc(x)
'''


# 8-bit constants (a quantisation table, a lookup of small ints): their raw_data must hold the
# values, one byte each (they were once written as 0/1, the bool encoding).
INT8_MODEL = '''import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops
import numpy as np


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a = ms.Tensor(np.array([-3, 5, 100, -128], np.int8))
        self.b = ms.Tensor(np.array([0, 7, 200, 255], np.uint8))

    def construct(self, x):
        return x * ops.cast(self.a, ms.float32) + ops.cast(self.b, ms.float32)
'''
INT8_VALUES = np.array([-3, 5, 100, -128], np.int8)
UINT8_VALUES = np.array([0, 7, 200, 255], np.uint8)


def check_int8_constants(args, work):
    from onnx import numpy_helper
    failures = []
    src = os.path.join(work, "int8.py")
    with open(src, "w") as f:
        f.write(INT8_MODEL)
    dest = os.path.join(work, "int8.onnx")
    run([args.bin, "export", src, "--format", "onnx", "--input", "2,4", "-o", dest])
    m = onnx.load(dest)
    onnx.checker.check_model(m, full_check=True)
    by_type = {t.data_type: numpy_helper.to_array(t) for t in m.graph.initializer}
    for dtype, want in ((onnx.TensorProto.INT8, INT8_VALUES), (onnx.TensorProto.UINT8, UINT8_VALUES)):
        got = by_type.get(dtype)
        if got is None or got.dtype != want.dtype or not np.array_equal(got, want):
            failures.append(f"{onnx.TensorProto.DataType.Name(dtype)} constant reads back as {got!r}, "
                            f"the model holds {want!r}")
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    sess = ort.InferenceSession(dest, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {sess.get_inputs()[0].name: x})
    want = x * INT8_VALUES.astype(np.float32) + UINT8_VALUES.astype(np.float32)
    if not np.allclose(y, want, rtol=1e-6, atol=0):
        failures.append(f"onnxruntime gives {y!r}, numpy {want!r}")
    return failures


def check_refusals(args, work):
    failures = []
    src = os.path.join(work, "unmapped.py")
    with open(src, "w") as f:
        f.write(UNMAPPED)
    dest = os.path.join(work, "keep.onnx")
    with open(dest, "wb") as f:
        f.write(b"old contents")
    p = run([args.bin, "export", src, "--format", "onnx", "--input", "2,4", "-o", dest],
            check=False)
    if p.returncode != 1:
        failures.append(f"unmapped op: exit {p.returncode}, expected 1 ({p.stderr.strip()})")
    if "LogSumExp" not in p.stderr or "line 12" not in p.stderr:
        failures.append(f"unmapped op: the message names no operator and line: {p.stderr!r}")
    with open(dest, "rb") as f:
        if f.read() != b"old contents":
            failures.append("unmapped op: the existing destination was changed")
    leftovers = [n for n in os.listdir(work) if n.startswith(".keep.onnx.tmp")]
    if leftovers:
        failures.append(f"temporary files left: {leftovers}")

    src = os.path.join(work, "symbolic.py")
    with open(src, "w") as f:
        f.write(SYMBOLIC)
    dest = os.path.join(work, "symbolic.onnx")
    p = run([args.bin, "export", src, "--format", "onnx", "--input", "N,4", "-o", dest],
            check=False)
    if p.returncode != 1 or os.path.exists(dest):
        failures.append(f"symbolic input: exit {p.returncode}, file written: "
                        f"{os.path.exists(dest)} ({p.stderr.strip()})")
    elif "symbolic.py:9:" not in p.stderr or "export-dynamic-shape" not in p.stderr or "(N, 4)" not in p.stderr:
        failures.append(f"symbolic input: unclear message {p.stderr!r}")
    return failures


def check_kill(args, work, rounds=6):
    """kill -9 during an export over an existing file: the destination is always the old file or
    a complete model that passes the checker (temporary files may remain, as after any kill)."""
    import signal
    import time
    failures = []
    src = os.path.join(MODELS, "resnet50.py")
    dest = os.path.join(work, "killed.onnx")
    old = b"the previous file"
    rng = np.random.default_rng(5)
    outcomes = {"old": 0, "new": 0}
    for r in range(rounds):
        with open(dest, "wb") as f:
            f.write(old)
        p = subprocess.Popen([args.bin, "export", src, "--entry", "resnet50()", "--format", "onnx",
                              "-o", dest],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(float(rng.uniform(0.02, 0.9)))
        p.send_signal(signal.SIGKILL)
        p.wait()
        with open(dest, "rb") as f:
            head = f.read(len(old) + 1)
        if head == old:
            outcomes["old"] += 1
        else:
            try:
                onnx.checker.check_model(onnx.load(dest), full_check=False)
                outcomes["new"] += 1
            except Exception as e:  # noqa: BLE001 -- reported
                failures.append(f"round {r}: the destination is neither old nor a valid model: {e}")
        for n in os.listdir(work):
            if n.startswith(".killed.onnx.tmp"):
                os.remove(os.path.join(work, n))
    os.remove(dest)
    return failures, outcomes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "cellscope"))
    ap.add_argument("--run", default=os.path.join(REPO, "build", "bench", "cellscope-run"))
    ap.add_argument("--only")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}")
    failed = []
    with tempfile.TemporaryDirectory(prefix="cellscope-onnx-") as work:
        for name, model, extra, modes in CASES:
            if args.only and args.only != name:
                continue
            for weights in modes:
                try:
                    ok, msg = check_case(args, name, model, extra, weights, work)
                except Exception as e:  # noqa: BLE001 -- reported as a failure
                    ok, msg = False, f"{type(e).__name__}: {e}"
                print(f"{'PASS' if ok else 'FAIL'} {name} [{weights}]: {msg}")
                if not ok:
                    failed.append(f"{name} [{weights}]")
        if not args.only:
            int8_failures = check_int8_constants(args, work)
            for f in int8_failures:
                print(f"FAIL int8 constants: {f}")
                failed.append("int8 constants")
            if not int8_failures:
                print("PASS int8/uint8 constants: values read back by numpy_helper and onnxruntime")
            for f in check_refusals(args, work):
                print(f"FAIL refusal: {f}")
                failed.append("refusal")
            if "refusal" not in failed:
                print("PASS refusals: unmapped operator and symbolic input")
            kill_failures, outcomes = check_kill(args, work)
            for f in kill_failures:
                print(f"FAIL kill -9: {f}")
                failed.append("kill -9")
            if not kill_failures:
                print(f"PASS kill -9 during export: destination old {outcomes['old']}x, "
                      f"complete new {outcomes['new']}x, never partial")
    if failed:
        print("failed: " + ", ".join(failed))
        return 1
    print("all ONNX checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
