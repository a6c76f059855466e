import numpy as np
import mindspore as ms
from mindspore import nn


class Gate(nn.Cell):
    def __init__(self, dim=64):
        super().__init__()
        self.proj = nn.Dense(dim, dim)

    def construct(self, x):
        return x * F.sigmoid(self.proj(x))


if __name__ == "__main__":
    net = Gate()
    x = ms.Tensor(np.ones((2, 64)), ms.float32)
    print(net(x).shape)
