import mindspore.nn as nn
import mindspore.numpy as mnp


class OpsNet13(nn.Cell):
    """Roll as Swin's shifted windows write it (mindspore.numpy.roll over two axes, then back),
    along one dim with a shift longer than the dim, by a whole period (nothing moves), and of the
    flattened tensor: MindIR writes StridedSlice pairs and Concat per shifted axis (as
    mindspore.numpy.roll does), ONNX Slice pairs and Concat. (ops.roll is the same node; MindSpore
    2.10 has no CPU kernel for it, so it is not in a model MindSpore must run.)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, pad_mode="same", has_bias=True)

    def construct(self, x):
        h = self.conv(x)
        shifted = mnp.roll(h, (-2, -2), (2, 3))
        back = mnp.roll(shifted * 2.0, (2, 2), (2, 3))
        along = mnp.roll(h, 9, 1)
        period = mnp.roll(h, 6, 2)
        flat = mnp.roll(h, -5)
        return back + along, period - flat
