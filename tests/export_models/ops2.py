import mindspore.nn as nn
import mindspore.ops as ops


class OpsNet2(nn.Cell):
    "HSwish, Split, Stack, CumSum and BroadcastTo."

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same")
        self.hswish = nn.HSwish()
        self.stack = ops.Stack(axis=1)

    def construct(self, x):
        y = self.hswish(self.conv(x))
        a, b = ops.split(y, 4, 1)
        p, q, r, s = ops.chunk(ops.hardswish(y), 4, 2)
        t = ops.stack((a, b), -1)
        u = self.stack((p, q, r, s))
        c = ops.cumsum(y, 2) + y.cumsum(-1)
        d = ops.broadcast_to(y[:, :1], (2, 8, 8, 8))
        return t, u, c + d
