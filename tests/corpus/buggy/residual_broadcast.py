"""A residual block that downsamples its main path but not its shortcut."""
import numpy as np
import mindspore as ms
from mindspore import nn


class BasicBlock(nn.Cell):
    def __init__(self, channels, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, stride=stride, pad_mode='pad', padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, stride=1, pad_mode='pad', padding=1)
        self.bn2 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out = out + identity
        return self.relu(out)


class TinyResNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.block1 = BasicBlock(64, stride=1)
        self.block2 = BasicBlock(64, stride=2)

    def construct(self, x):
        x = self.block1(x)
        x = self.block2(x)
        return x


if __name__ == "__main__":
    net = TinyResNet()
    x = ms.Tensor(np.ones((1, 64, 56, 56)), ms.float32)
    print(net(x).shape)
