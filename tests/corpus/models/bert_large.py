"""BERT-Large encoder (24 layers, hidden 1024, 16 heads, intermediate 4096) for MindSpore 2.x.

The BERT-base model of bert_base.py with the BERT-Large configuration (Devlin et al., 2019); used
by docs/hardware-model.md to compare the hardware layer with MindSpore's published BERT-Large
training throughput (sequence length 128). That figure is for pre-training (MindSpore model_zoo
bert, run_pretrain.py: BertNetworkWithLoss = BertModel + the masked-LM and next-sentence heads of
bert_for_pre_training.py), so `bert_large_pretraining()` adds those two heads.
"""
from mindspore import nn, ops, Parameter
from mindspore.common.initializer import initializer

from bert_base import BertConfig, BertModel

__all__ = ["bert_large", "bert_large_pretraining"]


def _large_config() -> BertConfig:
    config = BertConfig()
    config.hidden_size = 1024
    config.num_hidden_layers = 24
    config.num_attention_heads = 16
    config.intermediate_size = 4096
    return config


def bert_large(is_training: bool = True) -> BertModel:
    """BERT-Large, uncased."""
    return BertModel(_large_config(), is_training=is_training)


class BertPreTraining(nn.Cell):
    """BertModel + masked-LM head (dense + GeLU + LayerNorm, then the decoder tied to the word
    embeddings over the whole vocabulary, for the masked positions only) + next-sentence head.

    The masked positions are `max_predictions` per sequence (20 for sequence length 128, the
    create_pretraining_data default). The real network gathers them at positions read from the
    dataset; the first `max_predictions` positions stand in for them here (same shapes, same cost).
    """

    def __init__(self, config: BertConfig, is_training: bool = True, max_predictions: int = 20):
        super().__init__()
        self.bert = BertModel(config, is_training=is_training)
        self.max_predictions = max_predictions
        self.mlm_dense = nn.Dense(config.hidden_size, config.hidden_size)
        self.mlm_act = nn.GELU(approximate=False)
        self.mlm_layer_norm = nn.LayerNorm((config.hidden_size,), epsilon=config.layer_norm_eps)
        self.mlm_bias = Parameter(initializer("zeros", (config.vocab_size,)), name="mlm_bias")
        self.nsp = nn.Dense(config.hidden_size, 2)
        self.log_softmax = nn.LogSoftmax(axis=-1)

    def construct(self, input_ids):
        sequence_output, pooled_output = self.bert(input_ids)
        masked = sequence_output[:, :self.max_predictions]
        masked = self.mlm_layer_norm(self.mlm_act(self.mlm_dense(masked)))
        table = self.bert.embeddings.word_embeddings.embedding_table
        logits = ops.matmul(masked, table.T) + self.mlm_bias
        mlm_log_probs = self.log_softmax(logits)
        nsp_log_probs = self.log_softmax(self.nsp(pooled_output))
        return mlm_log_probs, nsp_log_probs


def bert_large_pretraining(is_training: bool = True) -> BertPreTraining:
    """BERT-Large with the pre-training heads, as MindSpore's BERT pre-training benchmark runs it."""
    return BertPreTraining(_large_config(), is_training=is_training)
