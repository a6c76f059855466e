"""LeNet-5 for MNIST-style 32x32 single-channel images (MindSpore model zoo style)."""
import numpy as np
import mindspore as ms
import mindspore.nn as nn
from mindspore.common.initializer import Normal

__all__ = ["LeNet5"]


class LeNet5(nn.Cell):
    """
    Lenet network.

    Args:
        num_class (int): Number of classes. Default: 10.
        num_channel (int): Number of input channels. Default: 1.

    Returns:
        Tensor, output tensor of shape (N, num_class).
    """

    def __init__(self, num_class: int = 10, num_channel: int = 1, include_top: bool = True):
        super(LeNet5, self).__init__()
        self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode='valid')
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode='valid')
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.include_top = include_top
        if self.include_top:
            self.flatten = nn.Flatten()
            self.fc1 = nn.Dense(16 * 5 * 5, 120, weight_init=Normal(0.02))
            self.fc2 = nn.Dense(120, 84, weight_init=Normal(0.02))
            self.fc3 = nn.Dense(84, num_class, weight_init=Normal(0.02))

    def construct(self, x):
        x = self.conv1(x)
        x = self.relu(x)
        x = self.max_pool2d(x)
        x = self.conv2(x)
        x = self.relu(x)
        x = self.max_pool2d(x)
        if not self.include_top:
            return x
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        x = self.fc3(x)
        return x


if __name__ == "__main__":
    net = LeNet5()
    x = ms.Tensor(np.ones((1, 1, 32, 32)), ms.float32)
    out = net(x)
    print(out.shape)
