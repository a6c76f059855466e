# cellscope-parallel-case: redistribution
# kind: warning
# rule: ReLU's output is split (2, 4) but Add wants its input split (8, 1): MindSpore inserts a tensor
#       redistribution between them (communication the user may not have meant). The harness asks
#       MindSpore's own redistribution engine (TensorTransform) which operators it needs.
# cite: mindspore/ccsrc/frontend/parallel/tensor_layout/tensor_redistribution.cc; mindspore/parallel/_tensor.py
# redistribute: relu.0 -> add.0
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.relu = ops.ReLU().shard(((2, 4),))
        self.add = ops.Add().shard(((8, 1), (8, 1)))  # <- diagnostic

    def construct(self, x, y):
        return self.add(self.relu(x), y)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)), Tensor(np.ones((16, 64), np.float32)))
out = net(*inputs)
