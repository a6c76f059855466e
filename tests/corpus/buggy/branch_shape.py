import numpy as np
import mindspore as ms
from mindspore import nn


class AdaptiveStem(nn.Cell):
    """Pools only when the activations are 'large' - the output shape depends on tensor values."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)

    def construct(self, x):
        y = self.conv(x)
        if y.mean() > 0.5:
            y = self.pool(y)
        return y


if __name__ == "__main__":
    net = AdaptiveStem()
    x = ms.Tensor(np.ones((1, 3, 32, 32)), ms.float32)
    print(net(x).shape)
