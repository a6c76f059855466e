# cellscope-parallel-case: search_mode_unknown
# kind: mistake
# rule: search_mode is one of recursive_programming, dynamic_programming, sharding_propagation;
#       set_auto_parallel_context raises ValueError in Python (measured with MindSpore 2.10; its
#       message names the key's other spelling, auto_parallel_search_mode)
# cite: mindspore/parallel/_auto_parallel_context.py set_strategy_search_mode
# mindspore-text: The context configuration parameter 'auto_parallel_search_mode' only support 'recursive_programming', 'dynamic_programming' and 'sharding_propagation', but got the value: greedy.
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="auto_parallel", search_mode="greedy", device_num=8)  # <- diagnostic


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(32, 16)

    def construct(self, x):
        return self.fc(x)


net = Net()
out = net(Tensor(np.ones((8, 32), np.float32)))
