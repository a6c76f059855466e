"""Runtime kernel family: Python scalar operands on either side (recorded as `scalar` /
`scalar_index` node attributes), int tensors with float scalars, comparisons with scalars."""
import math

import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops


class Scalars(nn.Cell):
    def __init__(self):
        super().__init__()
        self.scale = 1.0 / math.sqrt(16)

    def construct(self, x, ids):
        a = x - 3
        b = 3 - x
        c = x / 2.5
        d = 2.5 / (ops.abs(x) + 1)
        e = x ** 2
        f = ops.pow(ops.abs(x), 0.5)
        g = 2 ** x
        h = x > 0.5
        i = ops.maximum(x, 0.25) * self.scale
        j = ids * 0.5
        k = ids + 2
        m = ids != 0
        n = ids // 3
        o = ids / 4
        p = 1 - ids
        q = ids < 4.5
        mask = (1.0 - ops.cast(ids != 0, ms.float32)) * -10000.0
        return a, b, c, d, e, f, g, h, i, j, k, m, n, o, p, q, mask


net = Scalars()
