import numpy as np
import mindspore as ms
from mindspore import nn


class FlatConv(nn.Cell):
    """Feeds flattened MNIST vectors straight into a 2-D convolution."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.conv(x))


if __name__ == "__main__":
    net = FlatConv()
    x = ms.Tensor(np.ones((1, 784)), ms.float32)
    print(net(x))
