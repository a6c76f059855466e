import numpy as np
import mindspore as ms
from mindspore import nn


class Features(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 32, 3)
        self.act = nn.ReLU(True)

    def construct(self, x):
        return self.act(self.conv(x))


if __name__ == "__main__":
    net = Features()
    x = ms.Tensor(np.ones((1, 3, 32, 32)), ms.float32)
    print(net(x).shape)
