# cellscope-parallel-case: dryrun_ascend_target
# kind: valid
# env: MS_SIMULATION_LEVEL=1 RANK_SIZE=8 RANK_ID=0
# rule: the dry run is meant for the Ascend target; the PyPI 2.10 wheel carries the Ascend plugin but
#       cannot load it without CANN (libge_runner.so), so the Ascend target is refused here
# cite: mindspore/core/utils/ms_context.cc SetDeviceTargetFromInner; tutorials r2.10.0 debug/dryrun.md
# mindspore-text: Unsupported device target Ascend. This process only supports one of the ['CPU'].
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops
from mindspore.communication import init

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_device("Ascend")  # <- diagnostic
init()
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
