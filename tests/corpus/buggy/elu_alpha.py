import numpy as np
import mindspore as ms
from mindspore import nn, ops


class SmoothHead(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(32, 16)

    def construct(self, x):
        # torch.nn.functional.elu(x, alpha=0.5) ported as is: MindSpore's Elu supports alpha=1.0 only.
        return ops.elu(self.fc(x), alpha=0.5)


if __name__ == "__main__":
    net = SmoothHead()
    x = ms.Tensor(np.ones((2, 32)), ms.float32)
    print(net(x).shape)
