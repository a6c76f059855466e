"""`import os` in a function body binds a local named by a view: it must view the syntax tree's
text, not a string that dies when the import returns (ASan: stack-use-after-scope, found by the
python harness)."""
import mindspore as ms
from mindspore import nn


def helper(x):
    import os
    import os.path
    return x if os.path.sep else x


class Net(nn.Cell):
    def construct(self, x):
        y = helper(x)
        z = helper(y)
        return z


net = Net()
out = net(ms.Tensor([1.0, 2.0], ms.float32))
