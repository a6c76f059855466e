# cellscope-parallel-case: micro_size_zero
# kind: mistake
# rule: nn.PipelineCell's micro_size is > 0 (Python check); MindSpore's docs add micro_size >= pipeline_stages
# cite: mindspore/nn/wrap/cell_wrapper.py PipelineCell.__init__
# mindspore-text: For 'PipelineCell', the argument 'micro_size' must be large than 0, but got
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


net = nn.PipelineCell(nn.WithLossCell(Net(), nn.MSELoss()), micro_size=0)  # <- diagnostic
inputs = (Tensor(np.ones((8, 32), np.float32)), Tensor(np.zeros((8, 16), np.float32)))
out = net(*inputs)
