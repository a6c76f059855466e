"""LeNet-like net whose first Dense layer assumes 'same' padding (16*8*8) instead of 'valid' (16*5*5)."""
import numpy as np
import mindspore as ms
from mindspore import nn


class SmallNet(nn.Cell):
    def __init__(self, num_class=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode='valid')
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode='valid')
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(16 * 8 * 8, 120)
        self.fc2 = nn.Dense(120, num_class)

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        return self.fc2(x)


if __name__ == "__main__":
    net = SmallNet()
    x = ms.Tensor(np.ones((1, 1, 32, 32)), ms.float32)
    print(net(x).shape)
