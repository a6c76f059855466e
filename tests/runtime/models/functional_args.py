"""Runtime kernels with call-time arguments: a function's keyword and positional arguments
(ops.gelu's approximate, ops.leaky_relu's alpha, ops.softplus's beta and threshold) must reach its kernel as a layer's constructor arguments do."""
import mindspore.nn as nn
import mindspore.ops as ops


class FunctionalArgs(nn.Cell):
    def __init__(self):
        super().__init__()
        self.leaky = nn.LeakyReLU(alpha=0.3)
        self.elu = nn.ELU()

    def construct(self, x):
        a = ops.gelu(x, approximate='tanh')
        b = ops.gelu(x)
        c = ops.leaky_relu(x, 0.01)
        d = ops.leaky_relu(x, alpha=0.5)
        e = ops.softplus(x, beta=2, threshold=1.5)
        f = ops.softplus(x)
        g = ops.elu(x, 1.0)
        h = self.leaky(x) + self.elu(x)
        return a, b, c, d, e, f, g, h


net = FunctionalArgs()
