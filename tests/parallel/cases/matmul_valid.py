# cellscope-parallel-case: matmul_valid
# kind: valid
# rule: operator strategy valid (ranks match, every split divides its dimension, product 8 == device_num);
#       the contracted dimension is split by 4 on both inputs, so MindSpore adds a forward AllReduce (sum)
#       over the 4 devices that hold partial sums (MatMulBase::InferForwardCommunication).
# cite: mindspore/ccsrc/frontend/parallel/ops_info/matmul_info.cc MatMulBase::InferForwardCommunication
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(((2, 4), (4, 1)))

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
