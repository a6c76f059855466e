# cellscope-parallel-case: dryrun_cpu
# kind: valid
# env: MS_SIMULATION_LEVEL=1 RANK_SIZE=8 RANK_ID=0
# rule: MindSpore's dry run (simulation) is how a user checks a strategy for 8 devices on one machine;
#       MindSpore 2.10 refuses it on CPU in init(), before any strategy is looked at
# cite: mindspore/communication/management.py init(); tutorials r2.10.0 debug/dryrun.md
# mindspore-text: Dryrun is not supported on CPU device for a distributed job.
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops
from mindspore.communication import init

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_device("CPU")
init()  # <- diagnostic
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
