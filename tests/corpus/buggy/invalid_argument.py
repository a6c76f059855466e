import numpy as np
import mindspore as ms
from mindspore import nn


class Regularised(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(128, 64)
        self.drop = nn.Dropout(p=1.5)

    def construct(self, x):
        return self.drop(self.fc(x))


if __name__ == "__main__":
    net = Regularised()
    x = ms.Tensor(np.ones((1, 128)), ms.float32)
    print(net(x).shape)
