# cellscope-parallel-case: strategy_count_mismatch
# kind: mistake
# rule: one strategy per operator input (MatMul has two inputs, one strategy given); Python accepts it
# cite: mindspore/ccsrc/frontend/parallel/ops_info/operator_info.cc OperatorInfo::CheckStrategyByVector
# mindspore-text:  is not equal to inputs size:
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(((2, 4),))  # <- diagnostic

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
