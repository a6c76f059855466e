# cellscope-parallel-case: cell_shard_valid
# kind: valid
# rule: Cell.shard with one strategy per construct input, each of the input's rank, dividing its
#       dimensions and the 8 devices, and a parameter_plan naming a trainable Parameter as MindSpore names
#       it at the call ("self." removed: 'block2.dense1.weight') with a divisible strategy. The example of
#       MindSpore's own Cell.shard docstring, at sizes that divide.
# cite: mindspore/parallel/shard.py Shard.__call__, Shard._search_parameter_by_name, Shard._check_layout_is_valid;
#       mindspore/ccsrc/frontend/parallel/shard/shard.cc SetInputLayout
# env: CELLSCOPE_PROBE_GROUP_SIZE=8
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense1 = nn.Dense(32, 16)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.dense1(x))


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(64, 32)
        self.block2 = Block()
        self.block2.shard(in_strategy=((2, 1),), parameter_plan={"self.block2.dense1.weight": (4, 1)})

    def construct(self, x):
        return self.block2(self.dense(x))


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
