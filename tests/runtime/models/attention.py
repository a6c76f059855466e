"""nn.MultiheadAttention in inference: self-attention (sequence-major, weights averaged over the
heads), cross-attention with batch_first, kdim/vdim differing from embed_dim (separate
projections) and no biases, and per-head weights (average_attn_weights=False)."""
import mindspore.nn as nn


class Attention(nn.Cell):
    def __init__(self):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(6, 2)
        self.cross = nn.MultiheadAttention(6, 3, kdim=4, vdim=5, has_bias=False, batch_first=True)

    def construct(self, x, m):
        q = x.transpose(1, 0, 2)
        a, w = self.self_attn(q, q, q)
        b, v = self.cross(x, m[:, :, :4], m, average_attn_weights=False)
        return a, w, b, v


net = Attention()
