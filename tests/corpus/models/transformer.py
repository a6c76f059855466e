"""A small encoder-decoder Transformer ("base": d_model 512, 6+6 layers) for MindSpore 2.x."""
import math

import numpy as np
import mindspore as ms
from mindspore import nn, ops, Tensor
from mindspore.common.initializer import Normal, XavierUniform, initializer

__all__ = ["TransformerConfig", "Transformer", "transformer_base"]


class TransformerConfig:
    """Hyper-parameters of the Transformer."""

    def __init__(self, vocab_size=32000, d_model=512, num_heads=8, d_ff=2048,
                 num_encoder_layers=6, num_decoder_layers=6, max_len=256, dropout=0.1):
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_ff = d_ff
        self.num_encoder_layers = num_encoder_layers
        self.num_decoder_layers = num_decoder_layers
        self.max_len = max_len
        self.dropout = dropout


def sinusoid_position_table(max_len, d_model):
    """Fixed sinusoidal position encodings, shape (1, max_len, d_model)."""
    position = np.arange(max_len)[:, None].astype(np.float32)
    div_term = np.exp(np.arange(0, d_model, 2).astype(np.float32) * -(math.log(10000.0) / d_model))
    table = np.zeros((max_len, d_model), dtype=np.float32)
    table[:, 0::2] = np.sin(position * div_term)
    table[:, 1::2] = np.cos(position * div_term)
    return Tensor(table[None, :, :], ms.float32)


class MultiHeadAttention(nn.Cell):
    """Multi-head attention with separate query / key-value inputs."""

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        assert d_model % num_heads == 0
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.w_q = nn.Dense(d_model, d_model)
        self.w_k = nn.Dense(d_model, d_model)
        self.w_v = nn.Dense(d_model, d_model)
        self.w_o = nn.Dense(d_model, d_model)
        self.softmax = nn.Softmax(axis=-1)
        self.dropout = nn.Dropout(p=dropout)
        self.scale = 1.0 / math.sqrt(self.d_k)

    def _split_heads(self, x):
        b, s, _ = x.shape
        x = x.reshape(b, s, self.num_heads, self.d_k)
        return x.transpose(0, 2, 1, 3)

    def construct(self, query, key_value, mask=None):
        b, s_q, d = query.shape
        q = self._split_heads(self.w_q(query))
        k = self._split_heads(self.w_k(key_value))
        v = self._split_heads(self.w_v(key_value))
        scores = ops.matmul(q, k.swapaxes(-1, -2)) * self.scale
        if mask is not None:
            scores = scores + mask
        attn = self.dropout(self.softmax(scores))
        ctx = ops.matmul(attn, v)
        ctx = ctx.transpose(0, 2, 1, 3).reshape(b, s_q, d)
        return self.w_o(ctx)


class PositionwiseFeedForward(nn.Cell):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.fc1 = nn.Dense(d_model, d_ff, activation='relu')
        self.fc2 = nn.Dense(d_ff, d_model)
        self.dropout = nn.Dropout(p=dropout)

    def construct(self, x):
        return self.fc2(self.dropout(self.fc1(x)))


class EncoderLayer(nn.Cell):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.num_heads, cfg.dropout)
        self.ffn = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.norm1 = nn.LayerNorm((cfg.d_model,))
        self.norm2 = nn.LayerNorm((cfg.d_model,))
        self.dropout = nn.Dropout(p=cfg.dropout)

    def construct(self, x):
        x = self.norm1(x + self.dropout(self.self_attn(x, x)))
        x = self.norm2(x + self.dropout(self.ffn(x)))
        return x


class DecoderLayer(nn.Cell):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.num_heads, cfg.dropout)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.num_heads, cfg.dropout)
        self.ffn = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.norm1 = nn.LayerNorm((cfg.d_model,))
        self.norm2 = nn.LayerNorm((cfg.d_model,))
        self.norm3 = nn.LayerNorm((cfg.d_model,))
        self.dropout = nn.Dropout(p=cfg.dropout)

    def construct(self, x, memory, causal_mask):
        x = self.norm1(x + self.dropout(self.self_attn(x, x, causal_mask)))
        x = self.norm2(x + self.dropout(self.cross_attn(x, memory)))
        x = self.norm3(x + self.dropout(self.ffn(x)))
        return x


class Transformer(nn.Cell):
    """
    Encoder-decoder Transformer producing next-token logits.

    Inputs:
        src_ids (Tensor[int32]): (N, S) source token ids.
        tgt_ids (Tensor[int32]): (N, T) target token ids.

    Outputs:
        Tensor[float32]: (N, T, vocab_size) logits.
    """

    def __init__(self, cfg: TransformerConfig = TransformerConfig(), is_training: bool = False):
        super().__init__()
        if not is_training:
            cfg.dropout = 0.0
        self.d_model = cfg.d_model
        self.src_embedding = nn.Embedding(cfg.vocab_size, cfg.d_model, embedding_table=Normal(cfg.d_model ** -0.5))
        self.tgt_embedding = nn.Embedding(cfg.vocab_size, cfg.d_model, embedding_table=Normal(cfg.d_model ** -0.5))
        self.position_table = sinusoid_position_table(cfg.max_len, cfg.d_model)
        self.encoder_layers = nn.CellList([EncoderLayer(cfg) for _ in range(cfg.num_encoder_layers)])
        self.decoder_layers = nn.CellList([DecoderLayer(cfg) for _ in range(cfg.num_decoder_layers)])
        self.generator = nn.Dense(cfg.d_model, cfg.vocab_size, has_bias=False)
        self.dropout = nn.Dropout(p=cfg.dropout)
        self.embed_scale = math.sqrt(cfg.d_model)
        causal = np.triu(np.ones((cfg.max_len, cfg.max_len), dtype=np.float32), k=1) * -1e9
        self.causal_mask = Tensor(causal, ms.float32)

    def encode(self, src_ids):
        seq_len = src_ids.shape[1]
        x = self.src_embedding(src_ids) * self.embed_scale
        x = self.dropout(x + self.position_table[:, :seq_len, :])
        for layer in self.encoder_layers:
            x = layer(x)
        return x

    def decode(self, tgt_ids, memory):
        seq_len = tgt_ids.shape[1]
        y = self.tgt_embedding(tgt_ids) * self.embed_scale
        y = self.dropout(y + self.position_table[:, :seq_len, :])
        mask = self.causal_mask[:seq_len, :seq_len]
        for layer in self.decoder_layers:
            y = layer(y, memory, mask)
        return y

    def construct(self, src_ids, tgt_ids):
        memory = self.encode(src_ids)
        out = self.decode(tgt_ids, memory)
        logits = self.generator(out)
        return logits


def transformer_base(vocab_size: int = 32000) -> Transformer:
    return Transformer(TransformerConfig(vocab_size=vocab_size))


if __name__ == "__main__":
    net = transformer_base()
    src = ms.Tensor(np.ones((1, 32)), ms.int32)
    tgt = ms.Tensor(np.ones((1, 32)), ms.int32)
    logits = net(src, tgt)
    print(logits.shape)
