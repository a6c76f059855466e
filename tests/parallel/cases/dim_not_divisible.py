# cellscope-parallel-case: dim_not_divisible
# kind: mistake
# rule: every dimension is divisible by its split; here weight.shape[-1] = 30 is split by 8
#       (the article's "model_parallel requires weight.shape[-1] % 8 == 0")
# cite: mindspore/ccsrc/frontend/parallel/ops_info/operator_info.cc OperatorInfo::CheckStrategyByVector
# mindspore-text:  cannot be divisible by strategy value
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 30), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(((1, 1), (1, 8)))  # <- diagnostic

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
