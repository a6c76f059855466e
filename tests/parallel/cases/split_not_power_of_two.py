# cellscope-parallel-case: split_not_power_of_two
# kind: mistake
# rule: with a power-of-2 device_num (8), every split must be a power of 2 (3 divides 12 but is rejected)
# cite: mindspore/ccsrc/frontend/parallel/ops_info/operator_info.cc OperatorInfo::CheckStrategyByVector
# mindspore-text: , the value of strategy must be the power of 2, but get
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(((3, 1), (1, 1)))  # <- diagnostic

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((12, 64), np.float32)),)
out = net(*inputs)
