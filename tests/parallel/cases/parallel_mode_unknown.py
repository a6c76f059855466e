# cellscope-parallel-case: parallel_mode_unknown
# kind: mistake
# rule: parallel_mode is one of stand_alone, data_parallel, hybrid_parallel, semi_auto_parallel, auto_parallel
# cite: mindspore/parallel/_auto_parallel_context.py _AutoParallelContext.set_parallel_mode
# mindspore-text: The context configuration parameter 'parallel_mode' only support
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="model_parallel", device_num=8)  # <- diagnostic


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
