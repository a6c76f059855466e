# cellscope-parallel-case: split_zero
# kind: mistake
# rule: every split is a positive integer; Primitive.shard accepts 0 in Python, the C++ check rejects it
# cite: mindspore/ccsrc/frontend/parallel/ops_info/operator_info.cc OperatorInfo::CheckStrategyByVector
# mindspore-text: , the value of strategy must be larger than 0, but get
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(((0, 4), (4, 1)))  # <- diagnostic

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
