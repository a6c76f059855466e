"""Parameters built from numpy arrays the analysis computes: Swin's relative position index
(np.meshgrid, np.stack, reshape, a None-index difference, transpose, in-place += and *= on slices,
np.sum over an axis) and Swin V2's log-spaced coordinate table (np.sign, np.log2, np.abs)."""
import numpy as np
from mindspore import nn, ops, Parameter, Tensor
import mindspore.common.dtype as mstype


class Net(nn.Cell):
    def __init__(self, window_size=(8, 8)):
        super().__init__()
        coords_h = np.arange(window_size[0])
        coords_w = np.arange(window_size[1])
        coords = np.stack(np.meshgrid(coords_h, coords_w, indexing="ij"), axis=0)
        coords_flatten = coords.reshape(coords.shape[0], -1)
        relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
        r2 = np.transpose(relative_coords, (1, 2, 0))
        r2[:, :, 0] += window_size[0] - 1
        r2[:, :, 1] += window_size[1] - 1
        r2[:, :, 0] *= 2 * window_size[1] - 1
        idx = np.sum(r2, axis=-1)
        self.a = Parameter(Tensor(coords, mstype.float32), requires_grad=False)
        self.b = Parameter(Tensor(coords_flatten, mstype.float32), requires_grad=False)
        self.c = Parameter(Tensor(relative_coords, mstype.float32), requires_grad=False)
        self.d = Parameter(Tensor(r2, mstype.float32), requires_grad=False)
        self.e = Parameter(Tensor(idx, mstype.int32), requires_grad=False)
        table = np.stack(np.meshgrid(coords_h * 1.0 - 3.5, coords_w * 0.5, indexing="xy"), axis=0)
        table = np.transpose(table, (1, 2, 0)) / 3.5 * 8
        table = np.sign(table) * np.log2(np.abs(table) + 1) / np.log2(8)
        self.f = Parameter(Tensor(table, mstype.float32), requires_grad=False)
        self.mean = float(np.mean(idx, axis=(0, 1)))

    def construct(self, x):
        s = self.a.sum() + self.b.sum() * 0.5 + self.c.sum() + self.d.sum() * 2.0
        g = ops.gather(self.f.reshape(-1, 2), self.e.reshape(-1)[:16] % 64, 0)
        return x * s + self.e.astype(mstype.float32).sum() / 1000.0 + self.mean, g, self.f * 1.0


net = Net()
