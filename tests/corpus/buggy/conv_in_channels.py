import numpy as np
import mindspore as ms
from mindspore import nn


class LeNetRGB(nn.Cell):
    """LeNet copied from the MNIST example and fed RGB images."""

    def __init__(self, num_class=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode='valid')
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode='valid')
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(16 * 5 * 5, num_class)

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        return self.fc(self.flatten(x))


if __name__ == "__main__":
    net = LeNetRGB()
    x = ms.Tensor(np.ones((1, 3, 32, 32)), ms.float32)
    print(net(x).shape)
