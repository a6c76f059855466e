"""Operators added through their definitions alone (graphcore/src/ops/): nn.GroupNorm, nn.Mish and
ops.mish, ops.erf, ops.cumsum along a positive and a negative axis."""
import mindspore.nn as nn
import mindspore.ops as ops


class MoreOps(nn.Cell):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 4)
        self.mish = nn.Mish()

    def construct(self, x):
        a = self.gn(x)
        b = self.mish(x)
        c = ops.mish(x * 3.0)
        d = ops.erf(x)
        e = ops.cumsum(x, 2)
        f = ops.cumsum(x, axis=-1)
        return a, b, c, d, e, f


net = MoreOps()
