import mindspore.nn as nn
import mindspore.numpy as mnp
import mindspore.ops as ops
from mindspore import Tensor
from mindspore import dtype as mstype


class OpsNet14(nn.Cell):
    """nn.Conv1d as CoaT's aggregate and audio models use it, in 'pad' (stride and dilation 2),
    'same' and 'valid' modes: MindIR ExpandDims, Conv2D on the (N, C, 1, L) view with the 1-D
    attributes lifted, BiasAdd, Squeeze (as nn.Conv1d's construct writes it). Splits into pieces
    of unequal sizes, by ops.split's sizes and by mindspore.numpy.split's indices (CoaT's
    convolutional position encoding): one StridedSlice per piece, as MindSpore writes them.
    ops.clamp / ops.clip / Tensor.clamp with number bounds (float, int, None): ClampScalar; with
    tensor bounds (a constant, a computed one): ClampTensor."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 6, 3, stride=2, dilation=2, pad_mode="pad", padding=1, has_bias=True)
        self.c2 = nn.Conv1d(6, 6, 3, pad_mode="same", has_bias=True)
        self.c3 = nn.Conv1d(4, 5, 1, pad_mode="valid")
        self.lo = Tensor(-0.3, mstype.float32)

    def construct(self, x):
        h = self.c2(self.c1(x))
        a, b = ops.split(h, [2, 4], 1)
        p = mnp.split(h, [1, 3], axis=1)
        c = ops.clamp(p[2], -0.5, 0.5) + ops.clip(p[2], max=0.2) + p[2].clamp(min=0.1)
        t = ops.clamp(b, self.lo, b * 0.5 + 0.1) + ops.clamp(b, 0, 6)
        return a + p[1], b - ops.tile(p[0], (1, 4, 1)), p[2] + c, self.c3(x), t
