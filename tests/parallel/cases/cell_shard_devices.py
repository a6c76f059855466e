# cellscope-parallel-case: cell_shard_devices
# kind: mistake
# rule: a Cell.shard strategy needs at most the devices of a stage, and a divisor of them: (4, 4) needs 16 of 8
# cite: mindspore/ccsrc/frontend/parallel/shard/shard.cc CheckDeviceNum
# mindspore-text:  is larger than available device number: 
# mindspore-text: check device number failed
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense1 = nn.Dense(32, 16)

    def construct(self, x):
        return self.dense1(x)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.block2 = Block()
        self.block2.shard(in_strategy=((4, 4),))  # <- diagnostic

    def construct(self, x):
        return self.block2(x)


net = Net()
inputs = (Tensor(np.ones((16, 32), np.float32)),)
out = net(*inputs)
