import numpy as np
import mindspore as ms
from mindspore import nn
from mindspore.ops import MaxPool2d


class Pooler(nn.Cell):
    def __init__(self):
        super().__init__()
        self.pool = MaxPool2d(kernel_size=2, stride=2)

    def construct(self, x):
        return self.pool(x)


if __name__ == "__main__":
    net = Pooler()
    x = ms.Tensor(np.ones((1, 3, 32, 32)), ms.float32)
    print(net(x).shape)
