# cellscope-parallel-case: msrun_semi_auto
# kind: valid
# run: msrun
# rule: a valid 2-device operator split; under msrun with CPU workers MindSpore 2.10 refuses
#       semi_auto_parallel before any strategy check (GetCommInfo accepts only Ascend/GPU)
# cite: mindspore/ccsrc/frontend/parallel/step_parallel_utils.cc GetCommInfo
# mindspore-text: for semi_auto_parallel/auto_parallel mode, currently only support Ascend/GPU backend.
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops
from mindspore.communication import init

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_device("CPU")
init()
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel")


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(((2, 1), (1, 1)))

    def construct(self, x):
        return self.matmul(x, self.w)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
