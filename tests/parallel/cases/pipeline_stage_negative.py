# cellscope-parallel-case: pipeline_stage_negative
# kind: mistake
# rule: Cell.pipeline_stage is an int >= 0 (checked in Python by the property setter)
# cite: mindspore/nn/cell.py Cell.pipeline_stage (setter)
# mindspore-text: For 'Cell', the property 'pipeline_stage' can not be less than 0, but got
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
        self.fc1.pipeline_stage = -1  # <- diagnostic
        self.fc2.pipeline_stage = 1

    def construct(self, x):
        return self.fc2(self.fc1(x))


net = nn.PipelineCell(nn.WithLossCell(Net(), nn.MSELoss()), micro_size=2)
inputs = (Tensor(np.ones((8, 32), np.float32)), Tensor(np.zeros((8, 16), np.float32)))
out = net(*inputs)
