"""Reductions, selection and padding the CPU runtime gained with their definitions: ops.std /
ops.var (ddof), Tensor.std (correction), ops.logsumexp, ops.norm (2-norm, ord 1 and inf),
ops.max / ops.min with indices and Tensor.max(dim), ops.topk (largest and smallest),
ops.narrow, ops.linspace, ops.pad (constant with a value and a crop, reflect,
replicate), nn.Pad (REFLECT, SYMMETRIC), nn.PReLU, ops.Mod (the sign of the dividend) and
ops.invert."""
import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops


class SelectPad(nn.Cell):
    def __init__(self):
        super().__init__()
        self.prelu = nn.PReLU(4)
        self.reflect = nn.Pad(((0, 0), (0, 0), (1, 2), (2, 1)), mode="REFLECT")
        self.symmetric = nn.Pad(((0, 0), (1, 1), (0, 0), (3, 2)), mode="SYMMETRIC")

    def construct(self, x):
        a = ops.std(x, axis=1, ddof=1, keepdims=True) + ops.var(x, axis=1, keepdims=True)
        b = ops.var(x, axis=(2, 3))
        c = x.std(dim=2, correction=0) + x.std(dim=2, correction=1)
        d = ops.logsumexp(x * 20.0, 2, keepdim=True)
        e = ops.norm(x, dim=1)
        f = ops.norm(x, 1, dim=3) + ops.norm(x, float("inf"), dim=3)
        g, h = ops.max(x, axis=2)
        i, j = ops.min(x, 3, keepdims=True)
        k, l = x.max(1)
        m, n = ops.topk(x, 2, dim=1)
        o, p = ops.topk(x, 3, largest=False)
        q = ops.narrow(x, 3, 2, 3)
        r = ops.linspace(0.5, 2.0, 7)
        s = ops.pad(x, (1, 2, -1, 1), mode="constant", value=1.5)
        t = ops.pad(x, (2, 1, 1, 3), mode="reflect") + ops.pad(x, (2, 1, 1, 3), mode="replicate")
        u = self.reflect(x)
        v = self.symmetric(x)
        w = self.prelu(x)
        y = ops.Mod()(x * 5.0, 0.7) + ops.Mod()(x * -5.0, x + 2.5)
        z = ops.invert(ops.cast(x * 10.0, ms.int32))
        return a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, y, z


net = SelectPad()
