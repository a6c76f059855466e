import numpy as np
import mindspore as ms
from mindspore import nn, ops, Parameter
from mindspore.common.initializer import initializer, Normal


class Projection(nn.Cell):
    """Projects token features (B, S, 128) with a weight stored as (out, in) but not transposed."""

    def __init__(self, in_dim=128, out_dim=64):
        super().__init__()
        self.weight = Parameter(initializer(Normal(0.02), (out_dim, in_dim), ms.float32), name="weight")

    def construct(self, x):
        return ops.matmul(x, self.weight)


if __name__ == "__main__":
    net = Projection()
    x = ms.Tensor(np.ones((2, 16, 128)), ms.float32)
    print(net(x).shape)
