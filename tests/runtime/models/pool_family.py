"""Runtime kernel family: MaxPool2d / AvgPool2d pad modes, ceil_mode; MaxPool2d's dilation (an
int and an (h, w) tuple) and return_indices; ops.max_pool2d (stride defaults to kernel_size) and
ops.avg_pool2d with padding; ReduceMean/ReduceSum."""
import mindspore.nn as nn
import mindspore.ops as ops


class PoolFamily(nn.Cell):
    def __init__(self):
        super().__init__()
        self.max_valid = nn.MaxPool2d(kernel_size=2, stride=2)
        self.max_same = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode='same')
        self.max_pad = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode='pad', padding=1)
        self.max_ceil = nn.MaxPool2d(kernel_size=2, stride=2, pad_mode='pad', padding=0, ceil_mode=True)
        self.avg_valid = nn.AvgPool2d(kernel_size=2, stride=1)
        self.avg_same = nn.AvgPool2d(kernel_size=3, stride=2, pad_mode='same')
        self.mean = ops.ReduceMean(keep_dims=True)
        self.sum = ops.ReduceSum(keep_dims=False)
        self.max_dil = nn.MaxPool2d(3, 1, pad_mode='pad', padding=1, dilation=2)
        self.max_dil_idx = nn.MaxPool2d(2, 2, pad_mode='pad', dilation=(2, 3), ceil_mode=True,
                                        return_indices=True)

    def construct(self, x):
        a = self.max_valid(x)
        b = self.max_same(x)
        c = self.max_pad(x)
        d = self.max_ceil(x)
        e = self.avg_valid(x)
        f = self.avg_same(x)
        g = self.mean(x, (2, 3))
        h = self.sum(x, 1)
        i = self.max_dil(x)
        j, k = self.max_dil_idx(x)
        m = ops.max_pool2d(x, 3, None, 1, 1, False, True)
        n = ops.avg_pool2d(x, 3, 2, 1)
        return a, b, c, d, e, f, g, h, i, j, k, m, n


net = PoolFamily()
