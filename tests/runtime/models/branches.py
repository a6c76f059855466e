"""`if` on a tensor inside construct (the evaluator's Merge): a branch taken and a branch not
taken for the same input, and a variable only one branch changes."""
import mindspore.nn as nn


class Branches(nn.Cell):
    def construct(self, x):
        if x.sum() > -1000.0:
            y = x * 2.0
        else:
            y = x - 1.0
        if x.max() > 1000.0:
            z = x * 3.0
        else:
            z = x + 5.0
        w = x
        if x.min() < 0.0:
            w = w * -1.0
        return y, z, w


net = Branches()
