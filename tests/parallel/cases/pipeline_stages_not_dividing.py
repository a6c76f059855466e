# cellscope-parallel-case: pipeline_stages_not_dividing
# kind: mistake
# rule: device_num (8) must be divisible by pipeline_stages (3); set_auto_parallel_context accepts it in
#       Python, the check is in ParallelInit (C++), reached only when the graph compiles
# cite: mindspore/ccsrc/frontend/parallel/step_parallel_utils.cc ParallelInit
# mindspore-text: The parameter 'device_num' must be divided by 'split_stage_num', but got the device_num :
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8, pipeline_stages=3)  # <- diagnostic


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(32, 64)
        self.fc2 = nn.Dense(64, 64)
        self.fc3 = nn.Dense(64, 16)
        self.fc1.pipeline_stage = 0
        self.fc2.pipeline_stage = 1
        self.fc3.pipeline_stage = 2

    def construct(self, x):
        return self.fc3(self.fc2(self.fc1(x)))


net = nn.PipelineCell(nn.WithLossCell(Net(), nn.MSELoss()), micro_size=3)
inputs = (Tensor(np.ones((12, 32), np.float32)), Tensor(np.zeros((12, 16), np.float32)))
out = net(*inputs)
