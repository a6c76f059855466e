"""Runtime kernel family: Reshape/Flatten/Transpose/Concat/Squeeze/ExpandDims, Gather/Embedding,
Cast, OneHot, slicing."""
import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops


class Shapes(nn.Cell):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 8)
        self.transpose = ops.Transpose()
        self.concat = ops.Concat(axis=1)
        self.cast = ops.Cast()
        self.expand = ops.ExpandDims()
        self.squeeze = ops.Squeeze(0)

    def construct(self, x, ids):
        e = self.embedding(ids)                      # (2, 5, 8)
        t = self.transpose(e, (0, 2, 1))            # (2, 8, 5)
        r = t.reshape(2, 40)
        c = self.concat((r, r + r))                 # (2, 80)
        s = self.expand(c, 0)                        # (1, 2, 80)
        q = self.squeeze(s)                          # (2, 80)
        v = x.transpose(1, 0, 2)                     # (4, 3, 5)
        w = v[:, 1:3, ::2]
        k = self.cast(ids, ms.float32)
        return q, w, k, e[0]


net = Shapes()
