# cellscope-parallel-case: product_not_dividing
# kind: mistake
# rule: device_num 6 (not a power of 2, so the power-of-2 check is skipped); strategy product 4 does not divide 6
# cite: mindspore/ccsrc/frontend/parallel/ops_info/operator_info.cc OperatorInfo::InferRepeatedCalcInfo
# mindspore-text:  devices, but the device number of this stage is
# mindspore-text: , it can not be divisible by
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=6)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(((4, 1), (1, 1)))  # <- diagnostic

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((24, 64), np.float32)),)
out = net(*inputs)
