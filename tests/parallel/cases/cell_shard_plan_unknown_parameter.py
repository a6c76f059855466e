# cellscope-parallel-case: cell_shard_plan_unknown_parameter
# kind: warning
# rule: a parameter_plan key names a trainable Parameter of the sharded Cell by its name at the call, with
#       "self." removed; 'self.block2.dense1.wieght' names none, and MindSpore only logs a warning and ignores
#       it (the weight is then not split as meant)
# cite: mindspore/parallel/shard.py Shard._set_param_layout_into_parameter
# mindspore-text:  is not exist, ignored its setting.
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
        self.block2.shard(in_strategy=((2, 1),), parameter_plan={"self.block2.dense1.wieght": (2, 1)})  # <- diagnostic

    def construct(self, x):
        return self.block2(x)


net = Net()
inputs = (Tensor(np.ones((16, 30), np.float32)),)
out = net(*inputs)
