"""Runtime kernel family: Conv2d pad modes, stride, dilation, groups, depthwise, bias."""
import mindspore.nn as nn
import mindspore.ops as ops


class ConvFamily(nn.Cell):
    def __init__(self):
        super().__init__()
        self.same = nn.Conv2d(4, 8, 3, pad_mode='same', has_bias=True)
        self.valid = nn.Conv2d(8, 8, 3, stride=2, pad_mode='valid')
        self.pad = nn.Conv2d(8, 6, 3, pad_mode='pad', padding=(1, 2, 0, 1), has_bias=True)
        self.dilated = nn.Conv2d(6, 6, 3, dilation=2, pad_mode='same')
        self.grouped = nn.Conv2d(6, 12, 3, group=3, pad_mode='same', has_bias=True)
        self.depthwise = nn.Conv2d(12, 12, 3, stride=2, group=12, pad_mode='same')
        self.depthwise_pad = nn.Conv2d(12, 24, 5, group=12, pad_mode='pad', padding=2)
        self.pointwise = nn.Conv2d(24, 16, 1, has_bias=True)
        self.strided_same = nn.Conv2d(16, 8, 4, stride=3, pad_mode='same')

    def construct(self, x):
        x = self.same(x)
        x = self.valid(x)
        x = self.pad(x)
        x = self.dilated(x)
        x = self.grouped(x)
        x = self.depthwise(x)
        x = self.depthwise_pad(x)
        x = self.pointwise(x)
        return self.strided_same(x)


net = ConvFamily()
