# cellscope-parallel-case: matmul_out_strategy_valid
# kind: valid
# rule: MatMul out_strategy ((8, 1),) = (in_a * in_k, in_j) = (2*4, 1): MindSpore replaces the forward
#       AllReduce with a ReduceScatter (MatMul::CheckOutputStrategy sets forward_reduce_scatter_)
# cite: mindspore/ccsrc/frontend/parallel/ops_info/matmul_info.cc MatMul::CheckOutputStrategy
# mindspore-text: , the first dimension of output strategy must be
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(in_strategy=((2, 4), (4, 1)), out_strategy=((8, 1),))

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
