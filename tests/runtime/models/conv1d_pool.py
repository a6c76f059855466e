"""1-D convolutions and adaptive pools: nn.Conv1d (MindSpore runs it as Conv2D on a height-1
image, weight (out, in, 1, k)) with explicit padding and stride, and with 'same' padding and
groups; ops.conv1d with a Parameter weight (out, in, k), padding and dilation;
nn.AdaptiveAvgPool1d (the length divisible by output_size, as MindSpore requires);
nn.AdaptiveMaxPool2d with indices, to a smaller and to a larger size (overlapping cells)."""
import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops
import numpy as np


class Conv1dPool(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 6, 3, stride=2, pad_mode="pad", padding=1, has_bias=True)
        self.same = nn.Conv1d(4, 4, 3, pad_mode="same", group=2)
        self.w = ms.Parameter(ms.Tensor(np.ones((5, 4, 2), np.float32) * 0.1), name="w")
        self.avg = nn.AdaptiveAvgPool1d(5)
        self.max = nn.AdaptiveMaxPool2d((2, 3), return_indices=True)
        self.up = nn.AdaptiveMaxPool2d(4)

    def construct(self, x):
        a = self.conv(x)
        b = self.same(x)
        c = ops.conv1d(x, self.w, stride=1, pad_mode="pad", padding=2, dilation=2)
        d = self.avg(x)
        e, f = self.max(x.reshape(2, 4, 2, 5))
        g = self.up(x.reshape(2, 4, 2, 5))
        return a, b, c, d, e, f, g


net = Conv1dPool()
