"""Runtime kernel family: activations, softmax, unary math, elementwise with broadcasting."""
import mindspore.nn as nn
import mindspore.ops as ops


class Activations(nn.Cell):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()
        self.relu6 = nn.ReLU6()
        self.gelu = nn.GELU()
        self.gelu_exact = nn.GELU(approximate=False)
        self.sigmoid = nn.Sigmoid()
        self.tanh = nn.Tanh()
        self.softmax = nn.Softmax(axis=1)
        self.log_softmax = nn.LogSoftmax(axis=-1)

    def construct(self, x, y):
        a = self.relu(x) + self.relu6(x * y)
        b = self.gelu(x) - self.gelu_exact(y)
        c = self.sigmoid(x) * self.tanh(y)
        d = self.softmax(x) / (ops.exp(y) + ops.sqrt(ops.abs(x)))
        e = self.log_softmax(ops.log(ops.abs(y) + x * x))
        f = ops.pow(ops.abs(x), y)
        g = ops.maximum(x, y[0]) + ops.minimum(x, y[:, 1:2])
        return a, b, c, d, e, f, g


net = Activations()
