# cellscope-parallel-case: layout_valid
# kind: valid
# rule: Layout(device_matrix, alias_name): one distinct alias per device-matrix axis, each axis used at most
#       once per tensor, "None" for an unsplit dimension; prod(device_matrix) = 8 = device_num
# cite: mindspore/parallel/shard.py Layout.__init__ / Layout.__call__
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
        self.matmul = ops.MatMul().shard((layout("dp", "None"), layout("None", "mp")))

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
