# cellscope-parallel-case: cell_shard_not_divisible
# kind: mistake
# rule: every dimension of a Cell.shard input is divisible by its split: 30 by 8
# cite: mindspore/ccsrc/frontend/parallel/shard/shard.cc CheckShapeStrategy / CheckInputStrategy
# mindspore-text:  is not divisible by layout: 
# mindspore-text: Check conformance between input strategy 
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
        self.block2.shard(in_strategy=((1, 8),))  # <- diagnostic

    def construct(self, x):
        return self.block2(x)


net = Net()
inputs = (Tensor(np.ones((16, 30), np.float32)),)
out = net(*inputs)
