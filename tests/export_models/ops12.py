import mindspore.nn as nn
import mindspore.ops as ops


class OpsNet12(nn.Cell):
    """ops.L2Normalize along the last axis and along axis 1 on rows small enough for the norm to be
    clamped by epsilon (ONNX: Mul, ReduceSum, Max, Sqrt, Div), and the constant padding layers
    nn.ConstantPad2d (with a crop) and nn.ZeroPad2d (ops.pad's form)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, pad_mode="same", has_bias=True)
        self.l2 = ops.L2Normalize(-1)
        self.l2_small = ops.L2Normalize(1, 1e-2)
        self.pad = nn.ConstantPad2d((1, 2, -1, 1), 0.5)
        self.zero = nn.ZeroPad2d(1)

    def construct(self, x):
        h = self.conv(x)
        a = self.l2(h)
        b = self.l2_small(h * 0.01)
        c = self.pad(h)
        d = self.zero(a + b)
        return c, d
