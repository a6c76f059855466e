"""The padding layers of nn/layer/padding.py: nn.ConstantPad1d/2d/3d (with a value, and a crop),
nn.ZeroPad2d, nn.ReflectionPad1d/2d, nn.ReplicationPad1d/2d/3d; each is a Pad node with its
padding pairs, mode and value (mindcv's BiT pads with nn.ConstantPad2d before its max pool)."""
import mindspore.nn as nn


class PadLayers(nn.Cell):
    def __init__(self):
        super().__init__()
        self.c1 = nn.ConstantPad1d((1, 2), 0.5)
        self.c2 = nn.ConstantPad2d((1, 2, -1, 3), -1.25)
        self.c3 = nn.ConstantPad3d(1, 2.0)
        self.z = nn.ZeroPad2d((2, 1, 0, 1))
        self.r1 = nn.ReflectionPad1d(2)
        self.r2 = nn.ReflectionPad2d((1, 2, 3, 1))
        self.p1 = nn.ReplicationPad1d((2, 1))
        self.p2 = nn.ReplicationPad2d(2)
        self.p3 = nn.ReplicationPad3d((1, 0, 0, 1, 1, 1))

    def construct(self, x):
        a = self.c1(x) * 2.0
        b = self.c2(x)
        c = self.c3(x)
        d = self.z(x)
        e = self.r1(x)
        f = self.r2(x)
        g = self.p1(x[0])
        h = self.p2(x)
        i = self.p3(x.expand_dims(0))
        return a, b, c, d, e, f, g, h, i


net = PadLayers()
