# cellscope-parallel-case: cell_shard_parameter_plan
# kind: mistake
# rule: a parameter_plan strategy divides its Parameter's shape: block2.dense1.weight is (16, 30), split (1, 4).
#       MindSpore raises this in Python at the shard call on a multi-device job (measured: this case runs with get_group_size() answering 8).
# cite: mindspore/parallel/shard.py Shard._check_layout_is_valid
# mindspore-text: cannot be divisible by param_strategy
# env: CELLSCOPE_PROBE_GROUP_SIZE=8
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
        self.block2.shard(in_strategy=((2, 1),), parameter_plan={"self.block2.dense1.weight": (1, 4)})  # <- diagnostic

    def construct(self, x):
        return self.block2(x)


net = Net()
inputs = (Tensor(np.ones((16, 30), np.float32)),)
out = net(*inputs)
