import numpy as np
import mindspore as ms
from mindspore import nn


class Head(nn.Cell):
    """Classifier head ported from PyTorch: `bias=` is not a MindSpore keyword."""

    def __init__(self, in_features=512, num_class=10):
        super().__init__()
        self.fc = nn.Dense(in_features, num_class, bias=False)

    def construct(self, x):
        return self.fc(x)


if __name__ == "__main__":
    net = Head()
    x = ms.Tensor(np.ones((4, 512)), ms.float32)
    print(net(x).shape)
