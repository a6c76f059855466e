"""Cellscope's losses against MindSpore 2.10, every loss and option combination.

Forward: each case is a model file (a Cell applying the loss, as an nn Cell built in __init__ or
as the ops function called in construct) that `cellscope-run` analyses and runs on the same
logits and labels (.npy) as MindSpore (PyNative, CPU); the values must agree within RTOL
(relative to the largest magnitude).

Backward: the gradient w.r.t. the logits (and the target of the regression losses) from
mindspore.grad of sum(loss * dout), against the loss's backward operator run by `cellscope-op`
on the same inputs and dout, with the attributes the analysis records for the case.

Labels out of range: refused by the runtime with the batch index, the value and the classes.

The binaries: build/bench/cellscope-run and build/bench/cellscope-op (see test_checkpoint.py's
run_bin; missing: skipped unless CELLSCOPE_REQUIRE_BIN=1). Temporary files live in a directory
removed at the end of each case.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ground_truth as gt  # noqa: E402
import mindspore as ms  # noqa: E402
from mindspore import nn, ops  # noqa: E402
from test_checkpoint import TIMEOUT, run_bin  # noqa: E402,F401  (the fixture)

RTOL = 1e-6          # forward: |cellscope - mindspore| <= RTOL * max|mindspore| (+ float32 ulp)
GRAD_RTOL = 1e-5     # backward
CLASSES = 5

# Constants the cases' expressions use, written the same way into the model files.
CONSTANTS = {
    "W": [0.5, 1.0, 2.0, 0.25, 1.5],               # class weights (C,)
    "PW": [3.0, 0.5, 1.0, 2.0, 1.25],              # pos_weight, broadcast over rows
    "BW": [[0.5], [1.0], [2.0], [1.5]],            # BCE weight (N, 1)
}


@dataclass
class Case:
    name: str
    call: str                 # "nn.X(...)" (a Cell applied to x, y) or an expression of x, y
    op: str                   # the graph operator
    attrs: Dict[str, object]  # what the analysis records for the kernel
    x: tuple = (4, CLASSES)
    y: str = "index"          # index | prob | float | same (float of x's shape) | row (C,)
    extra: List[str] = field(default_factory=list)  # weight inputs of the operator, in order
    grads: int = 1            # gradients the backward operator returns (input, target)
    ignore: Optional[int] = None  # a label value to put in the labels


def cls(reduction: str, **kw) -> Dict[str, object]:
    return dict(reduction=reduction, **kw)


CASES = [
    # nn.SoftmaxCrossEntropyWithLogits(sparse, reduction)
    Case("sce_sparse_mean", "nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')",
         "SoftmaxCrossEntropyWithLogits", cls("mean", sparse=True)),
    Case("sce_sparse_sum", "nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='sum')",
         "SoftmaxCrossEntropyWithLogits", cls("sum", sparse=True)),
    Case("sce_sparse_none", "nn.SoftmaxCrossEntropyWithLogits(sparse=True)",
         "SoftmaxCrossEntropyWithLogits", cls("none", sparse=True)),
    Case("sce_sparse_mean_3d", "nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')",
         "SoftmaxCrossEntropyWithLogits", cls("mean", sparse=True), x=(2, 3, CLASSES)),
    Case("sce_dense_mean", "nn.SoftmaxCrossEntropyWithLogits(reduction='mean')",
         "SoftmaxCrossEntropyWithLogits", cls("mean", sparse=False), y="prob"),
    Case("sce_dense_none", "nn.SoftmaxCrossEntropyWithLogits()",
         "SoftmaxCrossEntropyWithLogits", cls("none", sparse=False), y="prob"),
    # nn.CrossEntropyLoss(weight, ignore_index, reduction, label_smoothing)
    Case("ce_mean", "nn.CrossEntropyLoss()", "CrossEntropyLoss", cls("mean")),
    Case("ce_sum_weight", "nn.CrossEntropyLoss(weight=W, reduction='sum')", "CrossEntropyLoss",
         cls("sum", has_weight=True), extra=["W"]),
    Case("ce_none_ignore", "nn.CrossEntropyLoss(ignore_index=2, reduction='none')",
         "CrossEntropyLoss", cls("none", ignore_index=2), ignore=2),
    Case("ce_mean_ignore_weight", "nn.CrossEntropyLoss(weight=W, ignore_index=-100)",
         "CrossEntropyLoss", cls("mean", has_weight=True), extra=["W"], ignore=-100),
    Case("ce_smoothing_weight", "nn.CrossEntropyLoss(weight=W, label_smoothing=0.1)",
         "CrossEntropyLoss", cls("mean", has_weight=True, label_smoothing=0.1), extra=["W"],
         ignore=-100),
    Case("ce_smoothing_none", "nn.CrossEntropyLoss(reduction='none', label_smoothing=0.3)",
         "CrossEntropyLoss", cls("none", label_smoothing=0.3)),
    Case("ce_prob_smoothing", "nn.CrossEntropyLoss(label_smoothing=0.2)", "CrossEntropyLoss",
         cls("mean", label_smoothing=0.2), y="prob"),
    Case("ce_prob_weight_sum", "nn.CrossEntropyLoss(weight=W, reduction='sum')",
         "CrossEntropyLoss", cls("sum", has_weight=True), y="prob", extra=["W"]),
    Case("ce_spatial_weight", "nn.CrossEntropyLoss(weight=W)", "CrossEntropyLoss",
         cls("mean", has_weight=True), x=(2, CLASSES, 3), extra=["W"]),
    Case("ce_spatial_4d_none", "nn.CrossEntropyLoss(reduction='none', label_smoothing=0.1)",
         "CrossEntropyLoss", cls("none", label_smoothing=0.1), x=(2, CLASSES, 2, 3)),
    Case("cross_entropy_fn", "ops.cross_entropy(x, y, W, ignore_index=1, label_smoothing=0.05)",
         "CrossEntropyLoss", cls("mean", has_weight=True, ignore_index=1, label_smoothing=0.05),
         extra=["W"], ignore=1),
    Case("cross_entropy_fn_prob", "ops.cross_entropy(x, y, reduction='none')",
         "CrossEntropyLoss", cls("none"), y="prob"),
    # nn.NLLLoss(weight, ignore_index, reduction), ops.nll_loss(..., label_smoothing)
    Case("nll_weight", "nn.NLLLoss(weight=W)", "NLLLoss", cls("mean", has_weight=True),
         extra=["W"], ignore=-100),
    Case("nll_none", "nn.NLLLoss(reduction='none', ignore_index=3)", "NLLLoss",
         cls("none", ignore_index=3), ignore=3),
    Case("nll_fn_smoothing", "ops.nll_loss(x, y, reduction='sum', label_smoothing=0.1)",
         "NLLLoss", cls("sum", label_smoothing=0.1)),
    # MSE / L1 / SmoothL1
    Case("mse_mean", "nn.MSELoss()", "MSELoss", cls("mean"), y="same", grads=2),
    Case("mse_none", "nn.MSELoss(reduction='none')", "MSELoss", cls("none"), y="same", grads=2),
    Case("mse_fn_broadcast", "ops.mse_loss(x, y, reduction='sum')", "MSELoss", cls("sum"),
         y="row", grads=2),
    Case("l1_mean", "nn.L1Loss()", "L1Loss", cls("mean"), y="same", grads=2),
    Case("l1_fn_none_broadcast", "ops.l1_loss(x, y, reduction='none')", "L1Loss", cls("none"),
         y="row", grads=2),
    Case("smooth_l1_default", "nn.SmoothL1Loss()", "SmoothL1Loss", cls("none", beta=1.0),
         y="same", grads=2),
    Case("smooth_l1_beta_mean", "nn.SmoothL1Loss(beta=0.5, reduction='mean')", "SmoothL1Loss",
         cls("mean", beta=0.5), y="same", grads=2),
    Case("smooth_l1_fn_sum", "ops.smooth_l1_loss(x, y, beta=2.0, reduction='sum')",
         "SmoothL1Loss", cls("sum", beta=2.0), y="same", grads=2),
    # BCEWithLogitsLoss(reduction, weight, pos_weight)
    Case("bce_mean", "nn.BCEWithLogitsLoss()", "BCEWithLogitsLoss", cls("mean"), y="float"),
    Case("bce_weights_sum", "nn.BCEWithLogitsLoss(reduction='sum', weight=BW, pos_weight=PW)",
         "BCEWithLogitsLoss", cls("sum", has_weight=True, has_pos_weight=True), y="float",
         extra=["BW", "PW"]),
    Case("bce_fn_pos_weight_none",
         "ops.binary_cross_entropy_with_logits(x, y, None, PW, reduction='none')",
         "BCEWithLogitsLoss", cls("none", has_pos_weight=True), y="float", extra=["PW"]),
    Case("bce_fn_weight_mean", "ops.binary_cross_entropy_with_logits(x, y, BW)",
         "BCEWithLogitsLoss", cls("mean", has_weight=True), y="float", extra=["BW"]),
]


def constant(name: str) -> np.ndarray:
    return np.array(CONSTANTS[name], np.float32)


def class_axis(shape: tuple, op: str) -> int:
    if op == "SoftmaxCrossEntropyWithLogits":
        return len(shape) - 1
    return 0 if len(shape) == 1 else 1


def make_inputs(case: Case, rng: np.random.Generator):
    x = rng.normal(0, 2, case.x).astype(np.float32)
    axis = class_axis(case.x, case.op)
    label_shape = tuple(d for i, d in enumerate(case.x) if i != axis)
    if case.y == "index":
        y = rng.integers(0, CLASSES, label_shape).astype(np.int32)
        if case.ignore is not None:
            y.flat[1] = case.ignore
    elif case.y == "prob":
        p = rng.uniform(0, 1, case.x).astype(np.float32)
        y = (p / p.sum(axis=axis, keepdims=True)).astype(np.float32)
    elif case.y == "float":
        y = rng.uniform(0, 1, case.x).astype(np.float32)
    elif case.y == "row":
        y = rng.normal(0, 1, case.x[-1:]).astype(np.float32)
    else:
        y = rng.normal(0, 2, case.x).astype(np.float32)
    return x, y


def model_source(case: Case) -> str:
    lines = ["import numpy as np", "import mindspore as ms", "from mindspore import nn, ops", ""]
    for k, v in CONSTANTS.items():
        lines.append("%s = ms.Tensor(np.array(%r, np.float32))" % (k, v))
    lines += ["", "", "class Net(nn.Cell):", "    def __init__(self):",
              "        super().__init__()"]
    if case.call.startswith("nn."):
        lines += ["        self.loss = " + case.call, "",
                  "    def construct(self, x, y):", "        return self.loss(x, y)"]
    else:
        lines += ["", "    def construct(self, x, y):", "        return " + case.call]
    return "\n".join(lines) + "\n"


def mindspore_loss(case: Case):
    scope = {"nn": nn, "ops": ops}
    scope.update({k: ms.Tensor(constant(k)) for k in CONSTANTS})
    if case.call.startswith("nn."):
        cell = eval(case.call, scope)  # noqa: S307 (the test's own expressions)
        return lambda x, y: cell(x, y)
    return lambda x, y: eval(case.call, dict(scope, x=x, y=y))  # noqa: S307


def spec(a: np.ndarray) -> str:
    dims = ",".join(str(d) for d in a.shape)
    return dims + (":int32" if a.dtype == np.int32 else "")


def op_bin(run_bin: Path) -> Path:  # noqa: F811
    p = run_bin.parent / "cellscope-op"
    if not p.is_file():
        pytest.skip("cellscope-op not built (ninja -C build bench/cellscope-op)")
    return p


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    if got.shape != want.shape or want.size == 0:
        return float("nan")
    scale = float(np.max(np.abs(want))) or 1.0
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / scale


def close(got: np.ndarray, want: np.ndarray, rtol: float) -> str:
    if got.shape != want.shape:
        return "shape %s, MindSpore %s" % (got.shape, want.shape)
    if want.size == 0:
        return ""
    scale = float(np.max(np.abs(want)))
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    # One float32 ulp of the scale on top: a loss summed in another order differs by that.
    tol = rtol * scale + 1.2e-7 * scale + 1e-12
    if not err <= tol:  # NaN fails too
        return "max abs err %.3g > %.3g (scale %.3g)" % (err, tol, scale)
    return ""


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_loss_forward_and_gradient_equal_mindspore(case: Case, run_bin: Path) -> None:  # noqa: F811
    gt.setup_mindspore()
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    x, y = make_inputs(case, rng)
    loss = mindspore_loss(case)
    want = loss(ms.Tensor(x), ms.Tensor(y)).asnumpy()
    with tempfile.TemporaryDirectory(prefix="cellscope_losses_") as tmp:
        d = Path(tmp)
        (d / "model.py").write_text(model_source(case))
        np.save(d / "x.npy", x)
        np.save(d / "y.npy", y)
        cmd = [str(run_bin), str(d / "model.py"), "--entry", "Net()",
               "--input-shape", spec(x), "--input-shape", spec(y),
               "--input", str(d / "x.npy"), "--input", str(d / "y.npy"),
               "--output-npy", str(d / "out.npy")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        assert proc.returncode == 0, proc.stderr[-4000:]
        assert "analysis error" not in proc.stderr, proc.stderr[-4000:]
        got = np.load(d / "out.npy")
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        problem = close(got, want, RTOL)
        print("%s forward %s: rel err %.2g %s" % (case.name, want.shape, rel_err(got, want),
                                                  problem or "ok"))
        assert not problem, "forward: " + problem

        # Backward: d sum(loss * dout) / d (x[, y]).
        dout = (rng.uniform(0.5, 1.5, want.shape).astype(np.float32) if want.ndim
                else np.array(1.25, np.float32))
        positions = (0, 1) if case.grads == 2 else 0

        def weighted(a, b):
            return (loss(a, b) * ms.Tensor(dout)).sum()

        grads = ms.grad(weighted, grad_position=positions)(ms.Tensor(x), ms.Tensor(y))
        grads = grads if isinstance(grads, tuple) else (grads,)
        np.save(d / "dout.npy", dout)
        inputs = [d / "x.npy", d / "y.npy"]
        for k in case.extra:
            np.save(d / (k + ".npy"), constant(k))
            inputs.append(d / (k + ".npy"))
        inputs.append(d / "dout.npy")
        cmd = [str(op_bin(run_bin)), case.op + "Grad", "--outputs", str(case.grads),
               "--out", str(d / "grad")]
        for k, v in case.attrs.items():
            cmd += ["--attr", "%s=%s" % (k, v)]
        for p in inputs:
            cmd += ["--input", str(p)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        assert proc.returncode == 0, proc.stderr[-4000:]
        for i, g in enumerate(grads):
            got_g = np.load(d / "grad" / ("%d.npy" % i))
            problem = close(got_g, g.asnumpy(), GRAD_RTOL)
            print("%s gradient %d: rel err %.2g %s" % (case.name, i, rel_err(got_g, g.asnumpy()),
                                                      problem or "ok"))
            assert not problem, "gradient %d: %s" % (i, problem)


@pytest.mark.parametrize("call", [
    "nn.CrossEntropyLoss()",
    "nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')",
    "ops.nll_loss(x, y)",
])
def test_label_out_of_range_is_refused_with_its_place(call: str, run_bin: Path) -> None:  # noqa: F811
    case = Case("oor", call, "", {})
    x = np.zeros((4, CLASSES), np.float32)
    y = np.array([0, 1, 7, 2], np.int32)
    with tempfile.TemporaryDirectory(prefix="cellscope_losses_") as tmp:
        d = Path(tmp)
        (d / "model.py").write_text(model_source(case))
        np.save(d / "x.npy", x)
        np.save(d / "y.npy", y)
        cmd = [str(run_bin), str(d / "model.py"), "--entry", "Net()",
               "--input-shape", spec(x), "--input-shape", spec(y),
               "--input", str(d / "x.npy"), "--input", str(d / "y.npy"),
               "--output-npy", str(d / "out.npy")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        assert proc.returncode != 0
        assert "label 7 at batch index 2 is out of range for 5 classes" in proc.stderr, \
            proc.stderr[-2000:]
        assert not (d / "out.npy").exists()
