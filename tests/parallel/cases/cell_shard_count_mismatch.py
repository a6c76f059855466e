# cellscope-parallel-case: cell_shard_count_mismatch
# kind: mistake
# rule: Cell.shard's in_strategy has one entry per input of the Cell's construct; Block takes one input, the
#       strategy gives two (MindSpore checks it when the graph compiles on Ascend/GPU)
# cite: mindspore/ccsrc/frontend/parallel/shard/shard.cc SetInputLayout
# mindspore-text: is not equal to in_strategy numbers: 
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense1 = nn.Dense(30, 16)

    def construct(self, x):
        return self.dense1(x)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.block2 = Block()
        self.block2.shard(in_strategy=((2, 1), (1, 8)))  # <- diagnostic

    def construct(self, x):
        return self.block2(x)


net = Net()
inputs = (Tensor(np.ones((16, 30), np.float32)),)
out = net(*inputs)
