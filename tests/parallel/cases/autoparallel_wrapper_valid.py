# cellscope-parallel-case: autoparallel_wrapper_valid
# kind: valid
# rule: MindSpore 2.10's newer interface: mindspore.parallel.auto_parallel.AutoParallel(network,
#       parallel_mode="semi_auto") wraps the top Cell instead of set_auto_parallel_context; the device
#       count comes from the launcher (msrun) rather than a device_num key
# cite: mindspore/parallel/auto_parallel.py AutoParallel
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops
from mindspore.parallel.auto_parallel import AutoParallel

ms.set_context(mode=ms.GRAPH_MODE)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.ones((64, 32), np.float32)), name="w")
        self.matmul = ops.MatMul().shard(((2, 4), (4, 1)))

    def construct(self, x):
        return self.matmul(x, self.w)


net = AutoParallel(Net(), parallel_mode="semi_auto")
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
