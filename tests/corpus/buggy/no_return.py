import numpy as np
import mindspore as ms
from mindspore import nn


class Encoder(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(32, 16)
        self.act = nn.Tanh()

    def construct(self, x):
        x = self.act(self.fc(x))


if __name__ == "__main__":
    net = Encoder()
    x = ms.Tensor(np.ones((1, 32)), ms.float32)
    print(net(x))
