# cellscope-parallel-case: cell_shard_auto_search_mode
# kind: mistake
# rule: Cell.shard under parallel_mode="auto_parallel" needs search_mode="sharding_propagation" (the default is
#       recursive_programming); under semi_auto_parallel MindSpore switches to it by itself
# cite: mindspore/ccsrc/frontend/parallel/shard/shard.cc Shard
# mindspore-text: 'search_mode' must be 'sharding_propagation' for 'Shard' when the 'parallel_mode' is 'auto_parallel.'
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="auto_parallel", device_num=8)


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
        self.block2.shard(in_strategy=((2, 1),))  # <- diagnostic

    def construct(self, x):
        return self.block2(x)


net = Net()
inputs = (Tensor(np.ones((16, 30), np.float32)),)
out = net(*inputs)
