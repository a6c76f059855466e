import mindspore.nn as nn
import mindspore.ops as ops


class OpsNet4(nn.Cell):
    "nn.Pad (CONSTANT) and ops.pad (constant, a value, a negative crop)."

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same")
        self.pad = nn.Pad(((0, 0), (0, 0), (1, 2), (2, 1)))

    def construct(self, x):
        y = ops.relu(self.conv(x))
        p = self.pad(y)
        q = ops.pad(y, (1, 1, 2, 0))
        r = ops.pad(y, (0, 1), value=2.5)
        return p, q, r
