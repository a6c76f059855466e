"""Vision Transformer ViT-B/16 (224x224, 1000 classes) written from scratch for MindSpore 2.x."""
from typing import Optional

import numpy as np
import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as P
from mindspore import Parameter, Tensor
from mindspore.common.initializer import initializer, TruncatedNormal, XavierUniform, Normal

__all__ = ["VisionTransformer", "vit_b_16"]


class PatchEmbedding(nn.Cell):
    """Image to patch embedding: (N, 3, 224, 224) -> (N, 196, 768)."""

    def __init__(self, image_size: int = 224, patch_size: int = 16, embed_dim: int = 768,
                 input_channels: int = 3):
        super(PatchEmbedding, self).__init__()
        self.image_size = image_size
        self.patch_size = patch_size
        self.num_patches = (image_size // patch_size) ** 2
        self.conv = nn.Conv2d(input_channels, embed_dim, kernel_size=patch_size, stride=patch_size,
                              has_bias=True)
        self.reshape = P.Reshape()
        self.transpose = P.Transpose()

    def construct(self, x):
        x = self.conv(x)
        b, c, h, w = x.shape
        x = self.reshape(x, (b, c, h * w))
        x = self.transpose(x, (0, 2, 1))
        return x


class Attention(nn.Cell):
    """Multi-head self attention written with Dense + BatchMatMul + Softmax."""

    def __init__(self, dim: int, num_heads: int = 8, keep_prob: float = 1.0,
                 attention_keep_prob: float = 1.0):
        super(Attention, self).__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = Tensor(head_dim ** -0.5, ms.float32)

        self.qkv = nn.Dense(dim, dim * 3)
        self.attn_drop = nn.Dropout(p=1.0 - attention_keep_prob)
        self.out = nn.Dense(dim, dim)
        self.out_drop = nn.Dropout(p=1.0 - keep_prob)

        self.mul = P.Mul()
        self.reshape = P.Reshape()
        self.transpose = P.Transpose()
        self.unstack = P.Unstack(axis=0)
        self.attn_matmul_v = P.BatchMatMul()
        self.q_matmul_k = P.BatchMatMul(transpose_b=True)
        self.softmax = nn.Softmax(axis=-1)

    def construct(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x)
        qkv = self.reshape(qkv, (b, n, 3, self.num_heads, c // self.num_heads))
        qkv = self.transpose(qkv, (2, 0, 3, 1, 4))
        q, k, v = self.unstack(qkv)

        attn = self.q_matmul_k(q, k)
        attn = self.mul(attn, self.scale)
        attn = self.softmax(attn)
        attn = self.attn_drop(attn)

        out = self.attn_matmul_v(attn, v)
        out = self.transpose(out, (0, 2, 1, 3))
        out = self.reshape(out, (b, n, c))
        out = self.out(out)
        out = self.out_drop(out)
        return out


class FeedForward(nn.Cell):
    """MLP block: Dense -> GELU -> Dropout -> Dense -> Dropout."""

    def __init__(self, in_features: int, hidden_features: Optional[int] = None,
                 out_features: Optional[int] = None, keep_prob: float = 1.0):
        super(FeedForward, self).__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.dense1 = nn.Dense(in_features, hidden_features)
        self.activation = nn.GELU()
        self.dense2 = nn.Dense(hidden_features, out_features)
        self.dropout = nn.Dropout(p=1.0 - keep_prob)

    def construct(self, x):
        x = self.dense1(x)
        x = self.activation(x)
        x = self.dropout(x)
        x = self.dense2(x)
        x = self.dropout(x)
        return x


class TransformerEncoderBlock(nn.Cell):
    """Pre-norm transformer encoder block."""

    def __init__(self, dim: int, num_heads: int, mlp_dim: int, keep_prob: float = 1.0,
                 attention_keep_prob: float = 1.0):
        super(TransformerEncoderBlock, self).__init__()
        self.norm1 = nn.LayerNorm((dim,), epsilon=1e-6)
        self.attn = Attention(dim, num_heads, keep_prob, attention_keep_prob)
        self.norm2 = nn.LayerNorm((dim,), epsilon=1e-6)
        self.mlp = FeedForward(dim, mlp_dim, keep_prob=keep_prob)

    def construct(self, x):
        x = x + self.attn(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return x


class VisionTransformer(nn.Cell):
    """
    ViT backbone with classification head.

    Args:
        image_size (int): input resolution. Default: 224.
        patch_size (int): patch size. Default: 16.
        embed_dim (int): hidden size. Default: 768.
        depth (int): number of encoder blocks. Default: 12.
        num_heads (int): attention heads. Default: 12.
        mlp_dim (int): MLP hidden size. Default: 3072.
        num_classes (int): classes of the head. Default: 1000.
    """

    def __init__(self,
                 image_size: int = 224,
                 input_channels: int = 3,
                 patch_size: int = 16,
                 embed_dim: int = 768,
                 depth: int = 12,
                 num_heads: int = 12,
                 mlp_dim: int = 3072,
                 keep_prob: float = 1.0,
                 attention_keep_prob: float = 1.0,
                 num_classes: int = 1000):
        super(VisionTransformer, self).__init__()
        self.patch_embedding = PatchEmbedding(image_size=image_size, patch_size=patch_size,
                                              embed_dim=embed_dim, input_channels=input_channels)
        num_patches = self.patch_embedding.num_patches

        self.cls_token = Parameter(initializer(TruncatedNormal(0.02), (1, 1, embed_dim), ms.float32),
                                   name='cls', requires_grad=True)
        self.pos_embedding = Parameter(initializer(TruncatedNormal(0.02), (1, num_patches + 1, embed_dim),
                                                   ms.float32),
                                       name='pos_embedding', requires_grad=True)
        self.pos_dropout = nn.Dropout(p=1.0 - keep_prob)

        blocks = []
        for _ in range(depth):
            blocks.append(TransformerEncoderBlock(embed_dim, num_heads, mlp_dim,
                                                  keep_prob, attention_keep_prob))
        self.transformer = nn.SequentialCell(blocks)
        self.norm = nn.LayerNorm((embed_dim,), epsilon=1e-6)
        self.head = nn.Dense(embed_dim, num_classes)

        self.tile = P.Tile()
        self.cat = P.Concat(axis=1)
        self.init_weights()

    def init_weights(self):
        for _, cell in self.cells_and_names():
            if isinstance(cell, nn.Dense):
                cell.weight.set_data(initializer(XavierUniform(), cell.weight.shape, cell.weight.dtype))
                if cell.bias is not None:
                    cell.bias.set_data(initializer(Normal(1e-6), cell.bias.shape, cell.bias.dtype))

    def construct(self, x):
        x = self.patch_embedding(x)
        cls_tokens = self.tile(self.cls_token, (x.shape[0], 1, 1))
        x = self.cat((cls_tokens, x))
        x = x + self.pos_embedding
        x = self.pos_dropout(x)
        x = self.transformer(x)
        x = self.norm(x)
        x = x[:, 0]
        x = self.head(x)
        return x


def vit_b_16(num_classes: int = 1000, image_size: int = 224) -> VisionTransformer:
    """ViT-B/16."""
    return VisionTransformer(image_size=image_size, patch_size=16, embed_dim=768, depth=12,
                             num_heads=12, mlp_dim=3072, num_classes=num_classes)


if __name__ == "__main__":
    net = vit_b_16()
    x = ms.Tensor(np.ones((1, 3, 224, 224)), ms.float32)
    ms.export(net, x, file_name="vit_b16", file_format="MINDIR")
