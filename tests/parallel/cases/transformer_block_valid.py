# cellscope-parallel-case: transformer_block_valid
# kind: valid
# rule: a self-attention block split dp=2 x mp=4 on 8 devices: the Q/K/V projection is split by columns
#       (heads), attention runs per head on each device, the output projection is split by rows, so its
#       contracted dimension is split by 4 and MindSpore adds a forward AllReduce (matmul_info.cc
#       MatMulBase::InferForwardCommunication). Batch x sequence rows are split by dp.
# cite: mindspore/ccsrc/frontend/parallel/ops_info/matmul_info.cc; ops_info/batch_matmul_info (BatchMatMul)
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8)

dp, mp = 2, 4
batch, seq, hidden, heads = 2, 8, 64, 4


class SelfAttention(nn.Cell):
    def __init__(self):
        super().__init__()
        self.wq = Parameter(Tensor(np.ones((hidden, hidden), np.float32) * 0.01), name="wq")
        self.wk = Parameter(Tensor(np.ones((hidden, hidden), np.float32) * 0.01), name="wk")
        self.wv = Parameter(Tensor(np.ones((hidden, hidden), np.float32) * 0.01), name="wv")
        self.wo = Parameter(Tensor(np.ones((hidden, hidden), np.float32) * 0.01), name="wo")
        self.q_proj = ops.MatMul().shard(((dp, 1), (1, mp)))
        self.k_proj = ops.MatMul().shard(((dp, 1), (1, mp)))
        self.v_proj = ops.MatMul().shard(((dp, 1), (1, mp)))
        self.reshape = ops.Reshape()
        self.split_heads = ops.Transpose().shard(((dp, 1, mp, 1),))
        self.scores = ops.BatchMatMul(transpose_b=True).shard(((dp, mp, 1, 1), (dp, mp, 1, 1)))
        self.softmax = ops.Softmax().shard(((dp, mp, 1, 1),))
        self.context = ops.BatchMatMul().shard(((dp, mp, 1, 1), (dp, mp, 1, 1)))
        self.merge_heads = ops.Transpose().shard(((dp, mp, 1, 1),))
        self.out_proj = ops.MatMul().shard(((dp, mp), (mp, 1)))

    def heads(self, t):
        t = self.reshape(t, (batch, seq, heads, hidden // heads))
        return self.split_heads(t, (0, 2, 1, 3))

    def construct(self, x):
        q = self.heads(self.q_proj(x, self.wq))
        k = self.heads(self.k_proj(x, self.wk))
        v = self.heads(self.v_proj(x, self.wv))
        p = self.softmax(self.scores(q, k))
        c = self.merge_heads(self.context(p, v), (0, 2, 1, 3))
        return self.out_proj(self.reshape(c, (batch * seq, hidden)), self.wo)


net = SelfAttention()
inputs = (Tensor(np.ones((batch * seq, hidden), np.float32)),)
out = net(*inputs)
