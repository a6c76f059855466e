import numpy as np
import mindspore as ms
from mindspore import nn


class ConvBlock(nn.Cell):
    def __init__(self, in_channels=3, out_channels=16):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)
        self.bn = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()

    def construct(self, x):
        x = self.bn(self.conv(x))
        self.relu(x)
        return x


if __name__ == "__main__":
    net = ConvBlock()
    x = ms.Tensor(np.ones((1, 3, 32, 32)), ms.float32)
    print(net(x).shape)
