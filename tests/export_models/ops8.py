import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops


class OpsNet8(nn.Cell):
    "FloorDiv (a scalar and a tensor divisor) and ops.zeros / ops.Zeros (folded to constants)."

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same")

    def construct(self, x):
        y = self.conv(x)
        a = y // 0.25
        b = ops.floor_div(y, ops.relu(y) + 0.125)
        z = ops.zeros((2, 8, 8, 8), ms.float32)
        z2 = ops.Zeros()((2, 8, 8, 1), ms.float32)
        return a, b, z * y + y, z2 * y - y
