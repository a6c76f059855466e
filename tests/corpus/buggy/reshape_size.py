import numpy as np
import mindspore as ms
from mindspore import nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 5, pad_mode='valid')
        self.pool = nn.MaxPool2d(2, 2)
        self.fc = nn.Dense(256, 10)

    def construct(self, x):
        x = self.pool(self.conv(x))
        x = ops.reshape(x, (x.shape[0], 16 * 4 * 4))
        return self.fc(x)


if __name__ == "__main__":
    net = Net()
    x = ms.Tensor(np.ones((1, 1, 28, 28)), ms.float32)
    print(net(x).shape)
