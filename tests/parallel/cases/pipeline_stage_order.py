# cellscope-parallel-case: pipeline_stage_order
# kind: mistake
# rule: stages must not decrease along the data flow (fc1 in stage 1 feeds fc2 in stage 0)
# cite: mindspore/ccsrc/frontend/parallel/pipeline_transformer/pipeline_transformer.cc PipelineTransformer::Coloring
# mindspore-text: The stage setting is incorrect. PreNode's stage:
# mindspore-text:  is larger than NextNode's stage:
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
        self.fc1.pipeline_stage = 1
        self.fc2.pipeline_stage = 0  # <- diagnostic

    def construct(self, x):
        return self.fc2(self.fc1(x))


net = nn.PipelineCell(nn.WithLossCell(Net(), nn.MSELoss()), micro_size=2)
inputs = (Tensor(np.ones((8, 32), np.float32)), Tensor(np.zeros((8, 16), np.float32)))
out = net(*inputs)
