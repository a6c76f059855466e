import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops


class OpsNet3(nn.Cell):
    "GroupNorm, ops.LayerNorm's three outputs, resize."

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same")
        self.gn = nn.GroupNorm(2, 8)
        self.ln = ops.LayerNorm(begin_norm_axis=-1, begin_params_axis=-1, epsilon=1e-5)
        self.g = ms.Parameter(ms.ops.ones(8, ms.float32), name="g")
        self.b = ms.Parameter(ms.ops.zeros(8, ms.float32), name="b")
        self.near = ops.ResizeNearestNeighbor((16, 16))

    def construct(self, x):
        y = self.conv(x)
        g = self.gn(y)
        n, m, v = self.ln(g, self.g, self.b)
        i1 = ops.interpolate(y, size=(16, 16), mode="nearest")
        i2 = ops.interpolate(y, size=(12, 12), mode="bilinear", align_corners=False)
        i3 = ops.interpolate(y, size=(12, 12), mode="bilinear", align_corners=True)
        return n, m, v, i1 + self.near(y), i2 + i3
