# cellscope-parallel-case: msrun_data_parallel
# kind: valid
# run: msrun
# rule: data parallel on CPU workers under msrun compiles and trains; the gradient AllReduce (sum, world
#       group, gradients_mean) is added by DistributedGradReducer inside TrainOneStepCell
# cite: mindspore/nn/wrap/grad_reducer.py DistributedGradReducer; mindspore/parallel/cluster/run.py (msrun)
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn
from mindspore.communication import get_group_size, get_rank, init

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_device("CPU")
init()
ms.set_auto_parallel_context(parallel_mode="data_parallel", gradients_mean=True)

net = nn.Dense(16, 4)
step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 0.1))
inputs = (Tensor(np.ones((8, 16), np.float32)), Tensor(np.zeros((8, 4), np.float32)))
loss = step(*inputs)
print("rank", get_rank(), "of", get_group_size(), "loss finite", bool(np.isfinite(loss.asnumpy())))
