import numpy as np

import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import Parameter, Tensor


class OpsNet10(nn.Cell):
    """The patterns of mindcv's edgenext, coat and crossvit that kept them from exporting: a
    ParameterTuple of named Parameters (crossvit's cls_token.i), numpy float64 constants
    (`Tensor(np.zeros(...)).astype(ms.bool_)` then `~` and cumsum with a dtype; `Tensor(np.ones(...))` read for
    its shape by expand_as), None indexes and ops.L2Normalize built in construct (edgenext's XCA)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same", has_bias=True)
        tokens = [Parameter(Tensor(np.zeros([1, 1, 8], np.float32)), name="cls_token." + str(i))
                  for i in range(2)]
        self.cls_token = ms.ParameterTuple(tokens)
        self.scale = Parameter(Tensor(np.ones((1, 1, 1)), ms.float32), name="scale")

    def construct(self, x):
        B, C, H, W = x.shape
        mask = Tensor(np.zeros((B, H, W))).astype(ms.bool_)
        not_mask = ~mask
        # a bool cumsum with a dtype: a Cast before the CumSum in the file, as MindSpore's
        y_embed = not_mask.cumsum(1, dtype=ms.float32)
        x_embed = not_mask.cumsum(2, dtype=ms.float32)
        # None indexes (edgenext's `x_embed[:, :, :, None]`): ExpandDims, then the StridedSlice
        # over the expanded rank, in the file, as mindspore.export writes them
        px = x_embed[:, :, :, None] * 0.5
        py = y_embed[:, None, :, 1:]
        x_embed = x_embed + px.sum(-1) + py.sum(1).sum(-1, keepdims=True)
        pos = ops.expand_dims(y_embed / (y_embed[:, -1:, :] + 1e-6) + x_embed, 1)
        f = self.conv(x) + pos
        t = ops.transpose(ops.reshape(f, (B, C * 0 + 8, H * W)), (0, 2, 1))
        like = Tensor(np.ones((B, 1, 8)))
        cls0 = self.cls_token[0].expand_as(like)
        cls1 = self.cls_token[1].expand_as(like)
        t = ops.concat((cls0 + cls1, t), axis=1)
        l2 = ops.L2Normalize(-1)
        q = l2(t)
        attn = ops.matmul(q, ops.transpose(q, (0, 2, 1))) * self.scale
        return ops.Softmax(-1)(attn)
