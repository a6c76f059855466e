import mindspore.nn as nn
import mindspore.numpy as mnp
import mindspore.ops as ops
from mindspore import Tensor
from mindspore import dtype as mstype


class OpsNet13(nn.Cell):
    """Roll as Swin's shifted windows write it (mindspore.numpy.roll over two axes, then back),
    along one dim with a shift longer than the dim, by a whole period (nothing moves), and of the
    flattened tensor: MindIR writes StridedSlice pairs and Concat per shifted axis (as
    mindspore.numpy.roll does), ONNX Slice pairs and Concat. (ops.roll is the same node; MindSpore
    2.10 has no CPU kernel for it, so it is not in a model MindSpore must run.)
    ops.clip_by_value as SwinV2 clips its logit scale: tensor bounds, one computed in __init__
    (ops.log of a constant), and a number bound with the other left None: Maximum / Minimum.
    ops.LpNorm as ConvNeXt V2's GRN (p 2 over two axes, keep_dims), p 1 and p 3 over one axis:
    the LpNorm primitive; ONNX ReduceL2 / ReduceL1 / Abs-Pow-ReduceSum-Pow, then Max(epsilon)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, pad_mode="same", has_bias=True)
        self.hi = ops.log(Tensor(2.0, mstype.float32))
        self.lo = Tensor(-0.3, mstype.float32)
        self.grn = ops.LpNorm(axis=[2, 3], p=2, keep_dims=True)
        self.l1 = ops.LpNorm(axis=1, p=1)
        self.l3 = ops.LpNorm(axis=-1, p=3, keep_dims=True)

    def construct(self, x):
        h = self.conv(x)
        shifted = mnp.roll(h, (-2, -2), (2, 3))
        back = mnp.roll(shifted * 2.0, (2, 2), (2, 3))
        along = mnp.roll(h, 9, 1)
        period = mnp.roll(h, 6, 2)
        flat = mnp.roll(h, -5)
        clipped = ops.clip_by_value(h, self.lo, self.hi)
        lower = ops.clip_by_value(h, clip_value_min=-0.2)
        gx = self.grn(h)
        grn = h * (gx / (ops.mean(gx, axis=1, keep_dims=True) + 1e-6))
        return back + along + clipped + grn + self.l3(h), period - flat + lower + ops.expand_dims(self.l1(h), 1)
