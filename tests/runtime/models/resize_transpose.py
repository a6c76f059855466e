"""Resizes, transposed convolutions and the LpNorm primitive: ops.ResizeNearestNeighbor (plain,
align_corners, half_pixel_centers; up and down), ops.interpolate(mode='nearest') to a size,
nn.Conv2dTranspose ('same' with stride 2 and a bias, 'valid', 'pad' with dilation and groups),
ops.LpNorm (p=3 over two axes, and the epsilon floor of a zero slice)."""
import mindspore.nn as nn
import mindspore.ops as ops


class ResizeTranspose(nn.Cell):
    def __init__(self):
        super().__init__()
        self.up = ops.ResizeNearestNeighbor((7, 9))
        self.down = ops.ResizeNearestNeighbor((3, 4), align_corners=True)
        self.half = ops.ResizeNearestNeighbor((8, 11), half_pixel_centers=True)
        self.same = nn.Conv2dTranspose(4, 3, 3, stride=2, pad_mode="same", has_bias=True)
        self.valid = nn.Conv2dTranspose(4, 6, (2, 3), stride=(1, 2), pad_mode="valid")
        self.pad = nn.Conv2dTranspose(4, 4, 3, stride=2, pad_mode="pad", padding=1, dilation=2,
                                      group=2)
        self.lp = ops.LpNorm(axis=[1, 2], p=3, keep_dims=True)
        self.lp_eps = ops.LpNorm(axis=[3], p=2, epsilon=0.5)

    def construct(self, x):
        a = self.up(x)
        b = self.down(x)
        c = self.half(x)
        d = ops.interpolate(x, size=(3, 8), mode="nearest")
        e = self.same(x)
        f = self.valid(x)
        g = self.pad(x)
        h = self.lp(x)
        i = self.lp_eps(x * 0.0)
        return a, b, c, d, e, f, g, h, i


net = ResizeTranspose()
