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
    (ops.log of a constant), and a number bound with the other left None: Maximum / Minimum."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, pad_mode="same", has_bias=True)
        self.hi = ops.log(Tensor(2.0, mstype.float32))
        self.lo = Tensor(-0.3, mstype.float32)

    def construct(self, x):
        h = self.conv(x)
        shifted = mnp.roll(h, (-2, -2), (2, 3))
        back = mnp.roll(shifted * 2.0, (2, 2), (2, 3))
        along = mnp.roll(h, 9, 1)
        period = mnp.roll(h, 6, 2)
        flat = mnp.roll(h, -5)
        clipped = ops.clip_by_value(h, self.lo, self.hi)
        lower = ops.clip_by_value(h, clip_value_min=-0.2)
        return back + along + clipped, period - flat + lower
