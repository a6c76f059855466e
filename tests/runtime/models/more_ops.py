"""Operators added through their definitions alone (graphcore/src/ops/): nn.GroupNorm, nn.Mish and
ops.mish, ops.erf, ops.cumsum along a positive and a negative axis, ops.sign, ops.round (halves
to even), nn.Tanhshrink, nn.Softmin, ops.FastGeLU, nn.Dropout2d (identity in
inference)."""
import mindspore.nn as nn
import mindspore.ops as ops


class MoreOps(nn.Cell):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 4)
        self.mish = nn.Mish()
        self.tanhshrink = nn.Tanhshrink()
        self.softmin = nn.Softmin(axis=1)
        self.fast_gelu = ops.FastGeLU()
        self.drop = nn.Dropout2d(p=0.3)

    def construct(self, x):
        a = self.gn(x)
        b = self.mish(x)
        c = ops.mish(x * 3.0)
        d = ops.erf(x)
        e = ops.cumsum(x, 2)
        f = ops.cumsum(x, axis=-1)
        g = ops.sign(x) + ops.round(x * 4.0) + ops.round(x * 2.0 + 0.5)
        h = self.tanhshrink(x) + self.softmin(x) + self.fast_gelu(self.drop(x))
        return a, b, c, d, e, f, g, h


net = MoreOps()
