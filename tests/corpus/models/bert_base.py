"""BERT-base encoder (uncased, 12 layers, hidden 768, 12 heads) for MindSpore 2.x."""
import math
from dataclasses import dataclass

import numpy as np
import mindspore as ms
from mindspore import nn, ops, Parameter, Tensor
from mindspore.common.initializer import TruncatedNormal, initializer

__all__ = ["BertConfig", "BertModel", "bert_base"]


@dataclass
class BertConfig:
    """Configuration for `BertModel`."""
    seq_length: int = 128
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12


class BertEmbeddings(nn.Cell):
    """Word + position + token type embeddings, followed by LayerNorm and dropout."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size,
                                            embedding_table=TruncatedNormal(config.initializer_range))
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size,
                                                embedding_table=TruncatedNormal(config.initializer_range))
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size,
                                                  embedding_table=TruncatedNormal(config.initializer_range))
        self.layer_norm = nn.LayerNorm((config.hidden_size,), epsilon=config.layer_norm_eps)
        self.dropout = nn.Dropout(p=config.hidden_dropout_prob)

    def construct(self, input_ids, token_type_ids):
        seq_length = input_ids.shape[1]
        position_ids = ops.arange(seq_length, dtype=ms.int32).reshape(1, -1)
        words = self.word_embeddings(input_ids)
        positions = self.position_embeddings(position_ids)
        token_types = self.token_type_embeddings(token_type_ids)
        embeddings = words + positions + token_types
        embeddings = self.layer_norm(embeddings)
        embeddings = self.dropout(embeddings)
        return embeddings


class BertSelfAttention(nn.Cell):
    """Multi-head scaled dot-product self attention."""

    def __init__(self, config: BertConfig):
        super().__init__()
        if config.hidden_size % config.num_attention_heads != 0:
            raise ValueError("hidden size must be a multiple of the number of heads")
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_heads * self.head_dim
        self.query = nn.Dense(config.hidden_size, self.all_head_size)
        self.key = nn.Dense(config.hidden_size, self.all_head_size)
        self.value = nn.Dense(config.hidden_size, self.all_head_size)
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.softmax = nn.Softmax(axis=-1)
        self.dropout = nn.Dropout(p=config.attention_probs_dropout_prob)
        self.matmul_trans_b = ops.BatchMatMul(transpose_b=True)
        self.matmul = ops.BatchMatMul()

    def transpose_for_scores(self, x):
        b, s, _ = x.shape
        x = ops.reshape(x, (b, s, self.num_heads, self.head_dim))
        return ops.transpose(x, (0, 2, 1, 3))

    def construct(self, hidden_states, attention_mask):
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))

        scores = self.matmul_trans_b(q, k) * self.scale
        scores = scores + attention_mask
        probs = self.softmax(scores)
        probs = self.dropout(probs)

        context = self.matmul(probs, v)
        context = ops.transpose(context, (0, 2, 1, 3))
        b, s, _, _ = context.shape
        context = ops.reshape(context, (b, s, self.all_head_size))
        return context


class BertSelfOutput(nn.Cell):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Dense(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm((config.hidden_size,), epsilon=config.layer_norm_eps)
        self.dropout = nn.Dropout(p=config.hidden_dropout_prob)

    def construct(self, hidden_states, input_tensor):
        hidden_states = self.dropout(self.dense(hidden_states))
        return self.layer_norm(hidden_states + input_tensor)


class BertLayer(nn.Cell):
    """One transformer encoder layer: attention + feed forward, post-LN."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertSelfAttention(config)
        self.attention_output = BertSelfOutput(config)
        self.intermediate = nn.Dense(config.hidden_size, config.intermediate_size)
        self.intermediate_act = nn.GELU(approximate=False)
        self.output = nn.Dense(config.intermediate_size, config.hidden_size)
        self.output_layer_norm = nn.LayerNorm((config.hidden_size,), epsilon=config.layer_norm_eps)
        self.output_dropout = nn.Dropout(p=config.hidden_dropout_prob)

    def construct(self, hidden_states, attention_mask):
        attn = self.attention(hidden_states, attention_mask)
        attn = self.attention_output(attn, hidden_states)
        inter = self.intermediate_act(self.intermediate(attn))
        out = self.output_dropout(self.output(inter))
        out = self.output_layer_norm(out + attn)
        return out


class BertEncoder(nn.Cell):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.layers = nn.CellList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def construct(self, hidden_states, attention_mask):
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask)
        return hidden_states


class BertPooler(nn.Cell):
    """Takes the hidden state of the first ([CLS]) token."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Dense(config.hidden_size, config.hidden_size, activation='tanh')

    def construct(self, hidden_states):
        first_token = hidden_states[:, 0]
        return self.dense(first_token)


class BertModel(nn.Cell):
    """
    Bidirectional Encoder Representations from Transformers.

    Returns:
        tuple(Tensor, Tensor): sequence output (N, S, H) and pooled output (N, H).
    """

    def __init__(self, config: BertConfig = None, is_training: bool = False):
        super().__init__()
        if config is None:
            config = BertConfig()
        if not is_training:
            config.hidden_dropout_prob = 0.0
            config.attention_probs_dropout_prob = 0.0
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config)
        self.cast = ops.Cast()

    def construct(self, input_ids):
        token_type_ids = ops.zeros_like(input_ids)
        # 1.0 for real tokens, 0.0 for padding (id 0)
        mask = self.cast(ops.not_equal(input_ids, 0), ms.float32)
        attention_mask = (1.0 - mask.expand_dims(1).expand_dims(1)) * -10000.0
        embedding_output = self.embeddings(input_ids, token_type_ids)
        sequence_output = self.encoder(embedding_output, attention_mask)
        pooled_output = self.pooler(sequence_output)
        return sequence_output, pooled_output


def bert_base(is_training: bool = False) -> BertModel:
    """BERT-base, uncased."""
    return BertModel(BertConfig(), is_training=is_training)


if __name__ == "__main__":
    net = bert_base()
    input_ids = ms.Tensor(np.ones((1, 128)), ms.int32)
    sequence_output, pooled_output = net(input_ids)
    print(sequence_output.shape, pooled_output.shape)
