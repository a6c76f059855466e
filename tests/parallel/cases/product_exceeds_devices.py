# cellscope-parallel-case: product_exceeds_devices
# kind: mistake
# rule: the product of a strategy (its device matrix, 4*4*1 = 16) must divide the devices of the stage (8)
# cite: mindspore/ccsrc/frontend/parallel/ops_info/operator_info.cc OperatorInfo::InferRepeatedCalcInfo
# mindspore-text:  devices, but the device number of this stage is
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(((4, 4), (4, 1)))  # <- diagnostic

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
