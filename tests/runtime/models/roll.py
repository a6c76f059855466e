"""mindspore.numpy.roll (Swin's shifted windows: `mnp.roll(x, (-s, -s), (1, 2))`): one axis, two
axes with a shift each, one int shift over two axes, negative axes, no axis (the flattened
tensor). (ops.roll has the same Roll node; MindSpore 2.10 has no CPU kernel for it: "The kernel
Roll unregistered", so it is not compared here.)"""
import mindspore.nn as nn
import mindspore.numpy as mnp


class Rolls(nn.Cell):
    def construct(self, x):
        a = mnp.roll(x, (-2, -2), (1, 2))
        b = mnp.roll(x, 3, 3)
        c = mnp.roll(x, 1, (1, -1))
        d = mnp.roll(x, -7)
        e = mnp.roll(x, (1, -2), (0, -2)) * 2.0
        return a, b, c, d, e


net = Rolls()
