import numpy as np
import mindspore as ms
from mindspore import nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(16, 4)

    def construct(self, x)
        return self.fc(x)


if __name__ == "__main__":
    net = Net()
    x = ms.Tensor(np.ones((1, 16)), ms.float32)
    print(net(x).shape)
