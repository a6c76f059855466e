# cellscope-parallel-case: pipeline_valid
# kind: valid
# rule: pipeline_stages 2 divides device_num 8 (4 devices per stage); every layer has a stage, stages
#       increase along the data flow; micro_size 2 >= pipeline_stages. MindSpore inserts Send/Receive
#       between the stages (pipeline_transformer).
# cite: mindspore/ccsrc/frontend/parallel/pipeline_transformer/pipeline_transformer.cc PipelineTransformer::Coloring
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8, pipeline_stages=2)


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
