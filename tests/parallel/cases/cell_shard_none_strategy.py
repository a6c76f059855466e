# cellscope-parallel-case: cell_shard_none_strategy
# kind: mistake
# rule: every in_strategy entry is a tuple of ints or a Layout; MindSpore 2.10's Python check refuses None
#       (older documentation shows None for "default strategy"; measured with get_group_size() answering 8)
# cite: mindspore/parallel/shard.py Shard._check_layout_inner_type
# mindspore-text: ' should be a tuple(tuple(int)) or tuple(mindspore.parallel.Layout), but got 
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
        self.block2.shard(in_strategy=(None,))  # <- diagnostic

    def construct(self, x):
        return self.block2(x)


net = Net()
inputs = (Tensor(np.ones((16, 30), np.float32)),)
out = net(*inputs)
