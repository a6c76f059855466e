"""Runtime kernel family: Dense (bias, activation), BatchNorm2d, LayerNorm, MatMul, BatchMatMul."""
import mindspore.nn as nn
import mindspore.ops as ops


class DenseNorm(nn.Cell):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(4, eps=1e-3, moving_mean_init='normal', moving_var_init='ones',
                                 gamma_init='normal', beta_init='normal')
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(4 * 6 * 6, 32, activation='relu')
        self.fc2 = nn.Dense(32, 24, has_bias=False, weight_init='xavier_uniform')
        self.ln = nn.LayerNorm((24,), epsilon=1e-5, gamma_init='normal', beta_init='normal')
        self.bmm = ops.BatchMatMul(transpose_b=True)
        self.mm = ops.MatMul(transpose_a=True)

    def construct(self, x):
        y = self.bn(x)
        y = self.flatten(y)
        y = self.fc1(y)
        y = self.fc2(y)
        y = self.ln(y)
        z = y.reshape(2, 4, 6)
        w = self.bmm(z, z)
        m = self.mm(y, y)
        return w, m


net = DenseNorm()
