import numpy as np
import mindspore as ms
from mindspore import nn


class ThreeLayerMLP(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(784, 512, activation='relu')
        self.fc2 = nn.Dense(512, 256, activation='relu')
        self.fc_out = nn.Dense(256, 10)

    def construct(self, x):
        x = self.fc2(self.fc1(x))
        return self.fc3(x)


if __name__ == "__main__":
    net = ThreeLayerMLP()
    x = ms.Tensor(np.ones((1, 784)), ms.float32)
    print(net(x).shape)
