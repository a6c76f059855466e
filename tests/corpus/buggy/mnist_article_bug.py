import numpy as np
import mindspore as ms
from mindspore import nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, pad_mode='pad')
        self.conv2 = nn.Conv2d(32, 64, 3, pad_mode='pad')
        self.relu = nn.ReLU()
        self.pool = ops.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(1600, 128)
        self.fc2 = nn.Dense(128, 10)

    def construct(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.pool(x)
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.fc2(x)
        return x


if __name__ == "__main__":
    net = Net()
    x = ms.Tensor(np.ones((1, 1, 28, 28)), ms.float32)
    print(net(x).shape)
