# cellscope-parallel-case: strategy_rank_mismatch
# kind: mistake
# rule: a strategy has as many entries as its input has dimensions (first input is 2-D, strategy has 3)
# cite: mindspore/ccsrc/frontend/parallel/ops_info/operator_info.cc OperatorInfo::CheckStrategyByVector
# mindspore-text: strategy len:
# mindspore-text:  is not equal to inputs len:
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(((2, 4, 1), (4, 1)))  # <- diagnostic

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
