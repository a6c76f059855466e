import numpy as np

import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import Parameter, Tensor


class OpsNet11(nn.Cell):
    """Variance and standard deviation in every form the exporter writes: ops.var / ops.std with
    ddof 0 or 1 (ReduceStd, squared for the variance), with another ddof and Tensor.var
    (ReduceMean, Sub, Pow, ReduceSum, Div by n - ddof, as mindspore.export writes ops.var(ddof=2);
    the standard deviation then Pow 0.5)."""

    def __init__(self):
        super().__init__()
        self.scale = Parameter(Tensor(np.full((1, 3, 1, 1), 1.5), ms.float32), name="scale")

    def construct(self, x):
        x = x * self.scale
        a = ops.var(x, axis=1, ddof=1, keepdims=True) + ops.var(x, axis=1, keepdims=True)
        b = ops.var(x, axis=(2, 3), ddof=2)
        c = x.var(axis=(1, 2), ddof=3)
        d = ops.std(x, axis=2, ddof=1) + ops.std(x, axis=2, ddof=0)
        e = ops.std(x, axis=3, ddof=2, keepdims=True)
        return a, b, c, d, e
