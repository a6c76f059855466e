# cellscope-parallel-case: pipeline_four_stages_valid
# kind: valid
# rule: 4 stages on 8 devices (2 per stage), one Dense per stage in increasing order, micro_size 4 >= 4
#       stages; Send/Receive at each of the 3 stage boundaries
# cite: mindspore/ccsrc/frontend/parallel/pipeline_transformer/pipeline_transformer.cc
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8, pipeline_stages=4)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.layers = nn.CellList([nn.Dense(32, 32) for _ in range(4)])
        for stage, layer in enumerate(self.layers):
            layer.pipeline_stage = stage

    def construct(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


net = nn.PipelineCell(nn.WithLossCell(Net(), nn.MSELoss()), micro_size=4)
inputs = (Tensor(np.ones((16, 32), np.float32)), Tensor(np.zeros((16, 32), np.float32)))
out = net(*inputs)
