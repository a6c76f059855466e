# cellscope-parallel-case: ms_shard_function
# kind: mistake
# rule: mindspore.shard(fn, in_strategy) on a function: each input's dimensions are divisible by their splits;
#       the (32, 10) inputs of MindSpore's own shard() docstring example split (4, 4): 10 by 4
# cite: mindspore/parallel/shard.py shard; mindspore/ccsrc/frontend/parallel/shard/shard.cc CheckShapeStrategy
# mindspore-text:  is not divisible by layout: 
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


def add(x, y):
    return x + y


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.add = ms.shard(add, in_strategy=((2, 4), (2, 4)))  # <- diagnostic

    def construct(self, x, y):
        return self.add(x, y)


net = Net()
inputs = (Tensor(np.ones((32, 10), np.float32)), Tensor(np.ones((32, 10), np.float32)))
out = net(*inputs)
