# cellscope-parallel-case: pipeline_stage_without_parameter
# kind: mistake
# rule: in pipeline training every stage must hold at least one parameter to train; stage 1 here
#       holds only a ReLU. MindSpore's pipeline split checks it in C++ when the graph compiles
# cite: string in MindSpore 2.10's libmindspore (the pipeline-split pass); docs/parallel.md P5
# mindspore-text: For Pipeline Parallel, each stage must have at least one parameter that needs to be trained, but stage:
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8, pipeline_stages=2)  # <- diagnostic


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(32, 16)
        self.act = nn.ReLU()
        self.fc1.pipeline_stage = 0
        self.act.pipeline_stage = 1

    def construct(self, x):
        return self.act(self.fc1(x))


net = nn.PipelineCell(nn.WithLossCell(Net(), nn.MSELoss()), micro_size=2)
inputs = (Tensor(np.ones((8, 32), np.float32)), Tensor(np.zeros((8, 16), np.float32)))
out = net(*inputs)
