# cellscope-parallel-case: pipeline_auto_dynamic_programming
# kind: mistake
# rule: a pipeline (pipeline_stages > 1) under parallel_mode="auto_parallel" needs search_mode
#       sharding_propagation or recursive_programming; dynamic_programming is accepted in Python
#       and refused by ParallelInit (C++) when the graph compiles
# cite: mindspore/ccsrc/frontend/parallel/step_parallel_utils.cc ParallelInit; docs/parallel.md P1b
# mindspore-text: To enable the pipeline parallel, please set the parallel mode to 
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="auto_parallel", search_mode="dynamic_programming", device_num=8, pipeline_stages=2)  # <- diagnostic


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(32, 64)
        self.fc2 = nn.Dense(64, 16)
        self.fc1.pipeline_stage = 0
        self.fc2.pipeline_stage = 1

    def construct(self, x):
        return self.fc2(self.fc1(x))


net = nn.PipelineCell(nn.WithLossCell(Net(), nn.MSELoss()), micro_size=2)
inputs = (Tensor(np.ones((8, 32), np.float32)), Tensor(np.zeros((8, 16), np.float32)))
out = net(*inputs)
