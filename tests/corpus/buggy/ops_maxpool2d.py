import numpy as np
import mindspore as ms
import mindspore.ops as ops
from mindspore import nn


class ConvPool(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.relu = nn.ReLU()
        self.pool = ops.MaxPool2d(kernel_size=2, stride=2)

    def construct(self, x):
        return self.pool(self.relu(self.conv(x)))


if __name__ == "__main__":
    net = ConvPool()
    x = ms.Tensor(np.ones((1, 3, 32, 32)), ms.float32)
    print(net(x).shape)
