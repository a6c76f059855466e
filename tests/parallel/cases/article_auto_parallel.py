# cellscope-parallel-case: article_auto_parallel
# kind: mistake
# rule: the article's ms.ops.auto_parallel(x, strategy=..., stage_id=...) is not a MindSpore API; the real
#       ones are Primitive.shard / Cell.shard / ms.parallel.shard (operator split) and Cell.pipeline_stage
#       (stage)
# cite: mindspore/ops/__init__.py (no auto_parallel); mindspore/parallel/__init__.py
# mindspore-text: module 'mindspore.ops' has no attribute 'auto_parallel'
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(64, 32)

    def construct(self, x):
        x = ms.ops.auto_parallel(x, strategy=((8, 1),), stage_id=0)  # <- diagnostic
        return self.fc(x)


net = Net()
inputs = (Tensor(np.ones((16, 64), np.float32)),)
out = net(*inputs)
