# cellscope-parallel-case: pipeline_layer_without_stage
# kind: warning
# rule: in a pipeline every layer should have a pipeline_stage. MindSpore does not reject fc2 here: its
#       nodes take the stage of the node that feeds them (PipelineTransformer::Coloring propagates a stage
#       to users that have none), so fc2 silently runs in stage 0. Cellscope warns.
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
        self.fc2 = nn.Dense(64, 64)  # <- diagnostic
        self.fc3 = nn.Dense(64, 16)
        self.fc1.pipeline_stage = 0
        self.fc3.pipeline_stage = 1

    def construct(self, x):
        return self.fc3(self.fc2(self.fc1(x)))


net = nn.PipelineCell(nn.WithLossCell(Net(), nn.MSELoss()), micro_size=2)
inputs = (Tensor(np.ones((8, 32), np.float32)), Tensor(np.zeros((8, 16), np.float32)))
out = net(*inputs)
