import mindspore.nn as nn
import mindspore.ops as ops


class OpsNet5(nn.Cell):
    "ReduceVar: Tensor.var and ops.var, each with ddof 0 and 1, kept and dropped axes."

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same")

    def construct(self, x):
        y = self.conv(x)
        a = y.var(-1, keepdims=True)
        b = y.var(1, ddof=1)
        c = ops.var(y, 1)
        d = ops.var(y, (1, 2), ddof=1, keepdims=True)
        return a, b, c, d
