# cellscope-parallel-case: matmul_k_mismatch
# kind: mistake
# rule: MatMul splits its contracted dimension the same way on both inputs (x columns by 4, w rows by 2)
# cite: mindspore/ccsrc/frontend/parallel/ops_info/matmul_info.cc MatMul::CheckInputStrategy
# mindspore-text: : Invalid strategy for mat_a
# mindspore-text: , the shard num of first input's column is
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(((2, 4), (2, 1)))  # <- diagnostic

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
