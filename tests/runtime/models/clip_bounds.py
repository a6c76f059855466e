"""ops.clip_by_value / ops.clamp with each kind of bound: tensor bounds (one computed in
__init__: SwinV2's `ops.log(Tensor(100))`), a number bound, a None lower bound with a tensor
upper one (the tensor is the upper bound, the node's only bound input), a None upper bound, and
Tensor.clip with numbers."""
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import Tensor
from mindspore import dtype as mstype


class Clips(nn.Cell):
    def __init__(self):
        super().__init__()
        self.hi = ops.log(Tensor(2.0, mstype.float32))
        self.lo = Tensor(-0.3, mstype.float32)

    def construct(self, x):
        a = ops.clip_by_value(x, self.lo, self.hi)
        b = ops.clip_by_value(x, None, self.lo)
        c = ops.clip_by_value(x, clip_value_min=-0.2)
        d = ops.clamp(x, None, 0.1)
        e = x.clip(-0.5, 0.25)
        return a, b, c, d, e


net = Clips()
