import numpy as np
import mindspore as ms
from mindspore import nn, ops


class SkipConcat(nn.Cell):
    """U-Net style skip connection that forgot to upsample the deep path."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(32, 32, 3, stride=2)
        self.fuse = nn.Conv2d(64, 32, 1)

    def construct(self, x):
        deep = self.down(x)
        y = ops.concat((x, deep), axis=1)
        return self.fuse(y)


if __name__ == "__main__":
    net = SkipConcat()
    x = ms.Tensor(np.ones((1, 32, 56, 56)), ms.float32)
    print(net(x).shape)
