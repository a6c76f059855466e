"""Argument rules the analyser enforces, against MindSpore itself: for each call, MindSpore 2.10
(PyNative, CPU) either returns or raises, and `cellscope graph` of a one-line Cell making the
same call must report an error exactly when MindSpore raised (and never otherwise).

Covers the rules whose MindSpore source this tier pins: ops.interpolate's (and nn.Upsample's)
modes, ranks, scale_factor / align_corners per mode and rank, size with scale_factor, the types
and counts of size and scale_factor, recompute_scale_factor; ops.narrow's start and
length ranges; nn.AdaptiveAvgPool1d's divisibility and rank.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ground_truth as gt  # noqa: E402
import mindspore as ms  # noqa: E402,F401
import mindspore.nn as nn  # noqa: E402,F401
import mindspore.ops as ops  # noqa: E402,F401
from test_against_mindspore import cellscope_bin  # noqa: E402,F401  (the fixture)

# (input shape, layer built in __init__ or None, expression on x)
CASES = [
    ((2, 4, 5, 6), None, "ops.interpolate(x, size=(3, 8), mode='nearest')"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, scale_factor=2.0, mode='nearest')"),
    ((2, 4, 5, 6), None,
     "ops.interpolate(x, scale_factor=2.0, mode='nearest', recompute_scale_factor=True)"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, size=(3, 8), mode='nearest', align_corners=False)"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, size=(3, 8), mode='bilinear', align_corners=True)"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, size=(3, 8), mode='bilinear')"),
    ((2, 4, 5), None, "ops.interpolate(x, size=8, mode='bilinear')"),
    ((2, 4, 5), None, "ops.interpolate(x, size=8, mode='linear', align_corners=True)"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, scale_factor=2.0, mode='area')"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, size=(3, 8), scale_factor=2.0)"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, size=(3, 8), mode='cubic')"),
    ((2, 4, 5, 6, 7), None, "ops.interpolate(x, scale_factor=2.0, mode='nearest')"),
    ((2, 4, 5, 6, 7), None,
     "ops.interpolate(x, size=(3, 4, 5), mode='trilinear', align_corners=True)"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, size=(3, 8), mode='nearest-exact')"),
    ((2, 3, 7), None, "ops.interpolate(x, size=(4,), mode='area')"),
    ((2, 3, 8), None, "ops.interpolate(x, size=(4,), mode='area')"),
    ((2, 3, 3), None, "ops.interpolate(x, size=(4,), mode='area')"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, size=(3, 4), mode='bicubic', align_corners=True)"),
    # 4-D nearest: scale_factor raises for every value unless recompute_scale_factor=True; an
    # int scale_factor is a TypeError at any rank; both or neither of size / scale_factor.
    ((2, 4, 5, 6), None, "ops.interpolate(x, scale_factor=0.5, mode='nearest')"),
    ((2, 4, 5, 6), None,
     "ops.interpolate(x, scale_factor=(1.5, 2.0), mode='nearest', recompute_scale_factor=True)"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, scale_factor=2, recompute_scale_factor=True)"),
    ((2, 4, 5, 6, 7), None, "ops.interpolate(x, scale_factor=2, mode='nearest')"),
    ((2, 4, 5, 6, 7), None, "ops.interpolate(x, scale_factor=-1.0, mode='nearest')"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, mode='bilinear')"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, size=(3, 3), recompute_scale_factor=True)"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, size=(3, 3, 3))"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, size=(0, 3))"),
    ((2, 4, 5, 6), None, "ops.interpolate(x, size=3)"),
    # nn.Upsample: ops.interpolate on the constructor's arguments.
    ((2, 4, 5, 6), "nn.Upsample(size=(7, 8))", "self.layer(x)"),
    ((2, 4, 5, 6), "nn.Upsample(size=(7, 8), mode='bilinear', align_corners=True)",
     "self.layer(x)"),
    ((2, 4, 5, 6), "nn.Upsample(scale_factor=2.0)", "self.layer(x)"),
    ((2, 4, 5, 6), "nn.Upsample(scale_factor=2.0, recompute_scale_factor=True)", "self.layer(x)"),
    ((2, 4, 5, 6), "nn.Upsample(scale_factor=2)", "self.layer(x)"),
    ((2, 4, 5, 6), "nn.Upsample()", "self.layer(x)"),
    ((2, 4, 5, 6), "nn.Upsample(size=(7, 8), mode='linear')", "self.layer(x)"),
    ((2, 4, 5, 6, 7), "nn.Upsample(scale_factor=2.0, mode='trilinear')", "self.layer(x)"),
    ((2, 4, 9), "nn.Upsample(size=3, mode='area')", "self.layer(x)"),
    ((2, 4, 5, 6), "nn.Upsample(size=(7, 8), scale_factor=2.0)", "self.layer(x)"),
    ((2, 8), None, "ops.narrow(x, 1, 2, 6)"),
    ((2, 8), None, "ops.narrow(x, 1, 8, 1)"),
    ((2, 8), None, "ops.narrow(x, 1, -1, 1)"),
    ((2, 8), None, "ops.narrow(x, 1, 2, 7)"),
    ((2, 8), None, "ops.narrow(x, 1, 2, 0)"),
    ((2, 4, 10), "nn.AdaptiveAvgPool1d(5)", "self.layer(x)"),
    ((2, 4, 10), "nn.AdaptiveAvgPool1d(3)", "self.layer(x)"),
    ((2, 4, 3), "nn.AdaptiveAvgPool1d(5)", "self.layer(x)"),
    ((4, 10), "nn.AdaptiveAvgPool1d(5)", "self.layer(x)"),
]


def mindspore_raises(shape, layer, expr) -> bool:
    gt.setup_mindspore()

    class Probe(nn.Cell):
        def __init__(self):
            super().__init__()
            if layer:
                self.layer = eval(layer)  # noqa: S307 - the cases above

        def construct(self, x):
            return eval(expr)  # noqa: S307

    x = ms.Tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    try:
        out = Probe()(x)
        (out[0] if isinstance(out, tuple) else out).asnumpy()
        return False
    except (ValueError, TypeError, RuntimeError, IndexError):
        return True


def cellscope_errors(binary: Path, shape, layer, expr, tmp: Path) -> list:
    src = ["import mindspore.nn as nn", "import mindspore.ops as ops", "", "",
           "class Probe(nn.Cell):", "    def __init__(self):", "        super().__init__()"]
    if layer:
        src.append("        self.layer = %s" % layer)
    src += ["", "    def construct(self, x):", "        return %s" % expr, ""]
    f = tmp / "probe.py"
    f.write_text("\n".join(src))
    cmd = [str(binary), "graph", str(f), "--entry", "Probe()", "--input",
           ",".join(str(d) for d in shape)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return [line for line in proc.stderr.splitlines() + proc.stdout.splitlines()
            if ": error: " in line]


@pytest.mark.parametrize("shape,layer,expr", CASES, ids=[c[2] if not c[1] else c[1] + str(c[0])
                                                         for c in CASES])
def test_an_error_exactly_when_mindspore_raises(shape, layer, expr, cellscope_bin,  # noqa: F811
                                                tmp_path: Path) -> None:
    raised = mindspore_raises(shape, layer, expr)
    errors = cellscope_errors(cellscope_bin, shape, layer, expr, tmp_path)
    print("MindSpore %s; cellscope: %s" % ("raises" if raised else "returns", errors or "no error"))
    assert bool(errors) == raised, (
        "MindSpore %s, cellscope reported %s" % ("raises" if raised else "returns",
                                                 errors or "no error"))
