import numpy as np
import mindspore as ms
from mindspore import nn


class Stem(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 64, stride=2)
        self.bn = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.bn(self.conv(x)))


if __name__ == "__main__":
    net = Stem()
    x = ms.Tensor(np.ones((1, 3, 224, 224)), ms.float32)
    print(net(x).shape)
