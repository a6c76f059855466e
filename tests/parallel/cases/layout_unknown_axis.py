# cellscope-parallel-case: layout_unknown_axis
# kind: mistake
# rule: a Layout is called with aliases it declares ("tp" is not one of ("dp", "mp"))
# cite: mindspore/parallel/shard.py Layout.__call__
# mindspore-text: The axis tp is not found in
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops
from mindspore.parallel import Layout

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)

layout = Layout((2, 4), ("dp", "mp"))


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard((layout("dp", "None"), layout("None", "tp")))  # <- diagnostic

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
