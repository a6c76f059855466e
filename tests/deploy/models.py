# Models the deploy tier exports with `cellscope export` and sends to an agent.
import mindspore.nn as nn
import mindspore.ops as ops


class Small(nn.Cell):
    """A LeNet-style convolutional net (about 60 KB of weights)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode="valid")
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(16 * 5 * 5, 120)
        self.fc2 = nn.Dense(120, 10)

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        return self.fc2(self.relu(self.fc1(x)))


class Big(nn.Cell):
    """Two 1024x1024 dense layers: about 8 MB, many chunks."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(1024, 1024)
        self.fc2 = nn.Dense(1024, 1024)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class TwoInputs(nn.Cell):
    """Two inputs (an image and a feature vector): the paths that take one-input models only."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, pad_mode="valid")
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(4 * 6 * 6 + 8, 5)

    def construct(self, x, y):
        return self.fc(ops.concat((self.flatten(self.conv(x)), y), 1))
